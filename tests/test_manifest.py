"""Manifests: loading one (a clear message naming file and entry, never a traceback), applying
it (exit codes), and writing the manifest a run calls for."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.reports.markdown import render_markdown
from loomcheck.reports.model import Finding
from loomcheck.run.applicability import declared_features
from loomcheck.run.manifest import (
    TODO,
    Manifest,
    apply_manifest,
    dump_manifest,
    load_manifest,
    updated_manifest,
)
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.errors import SpecError
from report_fixtures import BEYOND, FOLD, GATE, LEGACY
from report_fixtures import expecting as _expect
from report_fixtures import failing_record as _failing
from report_fixtures import manifest_file as _manifest_file
from report_fixtures import record_of as _record
from report_fixtures import report_of as _report


# -- loading a manifest: a clear message naming file and entry, never a traceback -----------
def test_broken_toml_is_a_spec_error_naming_the_file(tmp_path: Path) -> None:
    path = _manifest_file(tmp_path, '[[expected]]\ninvariant = "gate.i-receives-entry-i\n')
    with pytest.raises(SpecError, match=r"loomcheck\.toml: not valid TOML"):
        load_manifest(path)


def test_unknown_invariant_names_the_entry_and_suggests_the_id(tmp_path: Path) -> None:
    path = _manifest_file(tmp_path, f'[[expected]]\ninvariant = "{GATE}"\nreason = "a"\n'
                                    '[[expected]]\ninvariant = "gate.i-recieves-entry-i"\nreason = "typo"\n')
    with pytest.raises(SpecError) as raised:
        load_manifest(path)
    message = str(raised.value)
    assert str(path) in message and "[[expected]] #2" in message
    assert "unknown invariant 'gate.i-recieves-entry-i'" in message and f"did you mean '{GATE}'" in message


@pytest.mark.parametrize("text,expected", [
    (f'[[expected]]\ninvariant = "{GATE}"\nstatus = "fail"\n', f"[[expected]] #1 ('{GATE}'), field 'reason': Field required"),
    (f'[[expected]]\ninvariant = "{GATE}"\nstatus = "flaky"\nreason = "x"\n', "field 'status'"),
    ('[features]\nunsupported = ["time-travel"]\n', "field 'features.unsupported.0'"),
    ('colour = "red"\n', "field 'colour': Extra inputs are not permitted"),
    (f'[[expected]]\ninvariant = "{GATE}"\nreason = "a"\n[[expected]]\ninvariant = "{GATE}"\nreason = "b"\n',
     "more than one [[expected]] entry"),
    ('[[expected]]\ninvariant = "hazard.mixed-parallel"\nstatus = "fail"\nreason = "x"\n', "never failed"),
    ('[[not-applicable]]\ninvariant = "gate.nope"\nreason = "x"\n', "[[not-applicable]] #1: unknown invariant 'gate.nope'"),
    (f'[[not-applicable]]\ninvariant = "{GATE}"\n', "field 'not-applicable.0.reason': Field required"),
    (f'[[not-applicable]]\ninvariant = "{GATE}"\nreason = "a"\n[[expected]]\ninvariant = "{GATE}"\nreason = "b"\n',
     "both expected to fail and not applicable"),
])
def test_invalid_manifests_say_what_is_wrong(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(SpecError) as raised:
        load_manifest(_manifest_file(tmp_path, text))
    assert expected in str(raised.value) and str(tmp_path) in str(raised.value)


def test_a_broken_manifest_stops_the_run_before_it_starts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _manifest_file(tmp_path, '[[expected]]\ninvariant = "no.such-invariant"\nreason = "x"\n')
    assert main(["run", "--only", "gate.", "--report", str(tmp_path / "r"), "--manifest", str(path)]) == 3
    out = " ".join(capsys.readouterr().out.split())  # rich wraps long lines
    assert "spec error" in out and "unknown invariant 'no.such-invariant'" in out and "Traceback" not in out
    assert not (tmp_path / "r").exists()


def test_unsupported_features_are_taken_from_hello() -> None:
    manifest = Manifest.model_validate({"features": {"unsupported": ["timers", "parallel"], "reason": "not yet"}})
    assert manifest.unsupported == ["timers", "parallel"]
    assert declared_features(["fold", "timers", "recover"], manifest) == ["fold", "recover"]
    assert declared_features(["fold"], None) == ["fold"]


# -- applying a manifest: exit codes ------------------------------------------------------

def test_an_expected_failure_exits_0_and_is_annotated() -> None:
    report = _report(_failing(GATE), _record(BEYOND))
    assert report.exit_code() == 1
    apply_manifest(report, _expect((GATE, "fail", "no parallel support yet")))
    record = report.results[0]
    assert record.manifest == "expected-failure" and record.expected is not None
    assert record.expected.reason == "no parallel support yet"
    assert report.summary.expectedFailures == 1 and report.summary.failed == 1
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 0
    assert report.results[1].manifest is None and report.unexpectedPasses == []


def test_an_expected_error_exits_0_but_a_finding_still_exits_2() -> None:
    report = _report(_record(GATE, "error", message="crashed"))
    apply_manifest(report, _expect((GATE, "error", "crashes on two gates")))
    assert report.exit_code() == 0
    report.findings.append(Finding(kind="implementation-error", message="crashed", reason="crash"))
    assert report.exit_code() == 2


def test_failing_differently_than_expected_still_counts() -> None:
    report = _report(_failing(GATE))
    apply_manifest(report, _expect((GATE, "error", "it used to crash")))
    assert report.results[0].manifest == "still-failing-differently"
    assert report.exit_code() == 1


def test_an_unexpected_pass_is_listed_and_fails_only_when_strict(tmp_path: Path) -> None:
    report = _report(_record(GATE), _failing(BEYOND))
    apply_manifest(report, _expect((GATE, "fail", "no parallel"), (BEYOND, "fail", "known")))
    assert report.unexpectedPasses == [GATE]
    assert report.results[0].manifest == "unexpected-pass"
    assert report.exit_code() == 0 and report.exit_code(strict=True) == 1
    markdown = render_markdown(report)
    assert "Unexpected passes" in markdown and f"`{GATE}`: expected fail, no parallel" in markdown


def test_applying_again_replaces_the_annotations() -> None:
    report = _report(_failing(GATE))
    apply_manifest(report, _expect((GATE, "fail", "x")))
    apply_manifest(report, Manifest())
    assert report.results[0].expected is None and report.exit_code() == 1


def test_a_partial_run_with_only_expected_failures_still_exits_2() -> None:
    report = _report(_failing(GATE), complete=False, stopped="restart budget spent")
    apply_manifest(report, _expect((GATE, "fail", "x")))
    assert report.exit_code() == 2


# -- writing the manifest a run calls for ----------------------------------------------------
def test_updated_manifest_keeps_reasons_adds_todos_drops_passes_and_round_trips(tmp_path: Path) -> None:
    old = Manifest.model_validate({
        "implementation": "tiny-kernel",
        "features": {"unsupported": ["timers"], "reason": "no clock yet"},
        "expected": [
            {"invariant": GATE, "status": "fail", "reason": 'parallel: "soon"\nsee the issue', "link": "https://x.invalid/1"},
            {"invariant": BEYOND, "status": "fail", "reason": "fixed since"},
            {"invariant": "legacy.classified", "status": "error", "reason": "not run this time: kept"},
        ]})
    report = _report(_failing(GATE), _record(BEYOND), _record(LEGACY, "error", message="boom"), _failing(FOLD))
    new = updated_manifest(report, old)
    entries = {e.invariant: e for e in new.expected}
    assert set(entries) == {GATE, LEGACY, FOLD, "legacy.classified"}
    assert entries[GATE].reason == old.expected[0].reason and entries[GATE].link == "https://x.invalid/1"
    assert entries[LEGACY].status == "error" and entries[LEGACY].reason == TODO
    assert entries[FOLD].reason == TODO
    ids = load_catalogue().ids
    assert [e.invariant for e in new.expected] == sorted(entries, key=ids.index)  # catalogue order
    assert new.features == old.features and new.implementation == "tiny-kernel"
    text = dump_manifest(new)
    assert text.startswith("# loomcheck manifest")
    path = _manifest_file(tmp_path, text)
    assert load_manifest(path) == new
    # A run that calls for the manifest it is given passes under it.
    apply_manifest(report, load_manifest(path))
    assert report.exit_code(strict=True) == 0


def test_an_updated_manifest_without_an_old_one() -> None:
    new = updated_manifest(_report(_failing(GATE), _record(BEYOND)))
    assert new.implementation == "tiny-kernel" and [(e.invariant, e.reason) for e in new.expected] == [(GATE, TODO)]
    assert "unsupported = []" in dump_manifest(new)


