"""summary.md, the HTML matrix and `loomcheck diff`: what a kernel's maintainer and their CI
read. Reports are built from the model (fast); one regression-only run goes through
`loomcheck run` for real."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.reports.diff import diff_reports
from loomcheck.reports.html import render_matrix
from loomcheck.reports.markdown import render_markdown
from loomcheck.reports.model import Finding, Implementation, Report
from loomcheck.reports.writers import write_json
from loomcheck.run.manifest import (
    apply_manifest,
    dump_manifest,
    load_manifest,
)
from report_fixtures import ANSWER, BEYOND, FOLD, GATE, LEGACY
from report_fixtures import expecting as _expect
from report_fixtures import failing_record as _failing
from report_fixtures import manifest_file as _manifest_file
from report_fixtures import record_of as _record
from report_fixtures import report_of as _report


# -- summary.md ----------------------------------------------------------------------
def test_markdown_leads_with_what_fails_and_its_counterexample() -> None:
    report = _report(_record(BEYOND), _record(LEGACY, "error", message="a | b <b>bold</b>"), _failing(GATE),
                     complete=False, stopped="restart budget spent", seed=7)
    apply_manifest(report, _expect((LEGACY, "error", "crashes on legacy logs")))
    text = render_markdown(report)
    header = text.splitlines()[2]
    assert "python:tiny:make" in header and "profile ci" in header and "seed 7" in header
    assert "loomcheck 0.1.0" in header and "PARTIAL (restart budget spent)" in header
    assert text.startswith("## loomcheck: tiny-kernel 0.3.0 (EVENT_SCHEMA 1.20.0)")
    attention = text[text.index("### Not passing"):text.index("<details>")]
    rows = [line for line in attention.splitlines() if line.startswith("| `")]
    # The unexcused failure first, then the expected error; the message cannot break the table.
    assert GATE in rows[0] and "**fail**" in rows[0] and f"`loomcheck-report/counterexamples/{GATE}.json`" in rows[0]
    assert "0057 Decision" in rows[0] and "gate 2 received entry 1" in rows[0]
    assert LEGACY in rows[1] and "error (expected)" in rows[1]
    assert "a \\| b &lt;b>bold&lt;/b>" in rows[1] and rows[1].count(" | ") == 5
    folded = text[text.index("<details>"):]
    assert "</details>" in folded and all(r in folded for r in (GATE, BEYOND, LEGACY))


def test_markdown_of_a_clean_run_says_nothing_failed() -> None:
    text = render_markdown(_report(_record(GATE), _record(BEYOND)))
    assert "Nothing failed." in text and "### Not passing" not in text and "· complete" in text


# -- the HTML matrix -----------------------------------------------------------------
def test_matrix_has_a_row_per_invariant_a_column_per_report_and_relative_links(tmp_path: Path) -> None:
    # The run wrote its counterexample path from another working directory; the report moved since.
    first = _report(_failing(GATE, message="gate 2 got <entry 1>", counterexample="/ci/build/out/counterexamples/x.json"),
                    _record(BEYOND), _record(LEGACY, "not-applicable"), name="tiny-kernel")
    second = _report(_record(GATE), _record(BEYOND), _record(ANSWER, "error", message="crashed"),
                     name="other-kernel", complete=False, stopped="deadline")
    second.implementation.transport, second.implementation.command = "stdio", "node kernel.js"
    paths = [tmp_path / "runs" / "tiny" / "report.json", tmp_path / "runs" / "other" / "report.json"]
    html = render_matrix(list(zip(paths, [first, second])), html_dir=tmp_path / "site")
    assert re.findall(r'<tr id="([^"]+)"', html) == [GATE, BEYOND, LEGACY, ANSWER]  # by ADR, in catalogue order
    assert html.count("<th title=") == 2 and "tiny-kernel" in html and "other-kernel" in html
    assert "stdio: node kernel.js" in html and "PARTIAL" in html and "deadline" in html
    assert f'<a href="../runs/tiny/counterexamples/{GATE}.json">fail</a>' in html
    assert "gate 2 got &lt;entry 1&gt;" in html and "<entry 1>" not in html  # escaped, in the tooltip
    for row in re.findall(r"<tr id=.*?</tr>", html, flags=re.S):
        assert row.count("<td") == 2
    assert re.findall(r'<tr class="adr"><th colspan="3">([^<]+)<', html) == [
        "ADR 0057: multi-gate suspend passthrough", "ADR 0104: a recovery re-drive never answers a gate"]
    assert html.count('<tr class="summary">') == 1 and "1 fail" in html
    assert "http" not in html.replace('lang="en"', "") and "<script" not in html


def test_run_writes_summary_and_the_page_beside_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real (regression-only, so fast) run of a seeded mutant, with a manifest that expects its failure."""
    manifest = _manifest_file(tmp_path, f'[[expected]]\ninvariant = "{LEGACY}"\nreason = "no fallback yet"\n')
    report_dir, written = tmp_path / "r", tmp_path / "written.toml"
    code = main(["run", "--impl", "python:mutants.no_legacy_fallback:make", "--only", LEGACY, "--report", str(report_dir),
                 "--manifest", str(manifest), "--write-manifest", str(written)])
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads((report_dir / "report.json").read_text())
    assert data["results"][0]["manifest"] == "expected-failure" and data["summary"]["expectedFailures"] == 1
    assert "fail (expected)" in (report_dir / "summary.md").read_text()
    html = (report_dir / "report.html").read_text()
    assert html.count("<tr id=") == 1 and "fail (expected)" in html
    assert "<b>1</b>expected by the manifest" in html and "exit 0: everything passed" in html
    assert load_manifest(written).expected[0].reason == "no fallback yet"


def test_an_unexpected_pass_in_a_run_is_printed_and_strict_exits_1(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest_file(tmp_path, f'[[expected]]\ninvariant = "{LEGACY}"\nreason = "no fallback yet"\n')
    args = ["run", "--impl", "reference:memory", "--only", LEGACY, "--report", str(tmp_path / "r"), "--manifest", str(manifest)]
    assert main(args) == 0
    assert f"unexpected pass {LEGACY}" in capsys.readouterr().out
    assert json.loads((tmp_path / "r" / "report.json").read_text())["unexpectedPasses"] == [LEGACY]
    assert main([*args, "--strict-manifest"]) == 1


# -- loomcheck diff and matrix ------------------------------------------------------------
def _write(tmp_path: Path, name: str, report: Report) -> str:
    path = tmp_path / name / "report.json"
    write_json(report, path)
    return str(path)


def test_diff_classifies_every_change() -> None:
    base = _report(_failing(GATE), _record(BEYOND), _record(LEGACY, "error"), _record(FOLD))
    candidate = _report(_record(GATE), _failing(BEYOND), _failing(LEGACY), _record("fold.state-is-fold-of-log"))
    diff = diff_reports(base, candidate)
    assert [c.id for c in diff.newly_failing] == [BEYOND] and [c.id for c in diff.fixed] == [GATE]
    assert [(c.id, c.before, c.after) for c in diff.still_failing] == [(LEGACY, "error", "fail")]
    assert [c.id for c in diff.added] == ["fold.state-is-fold-of-log"] and [c.id for c in diff.removed] == [FOLD]
    assert diff.exit_code() == 1


def test_diff_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path, "base", _report(_failing(GATE), _record(BEYOND)))
    worse = _write(tmp_path, "worse", _report(_failing(GATE), _failing(BEYOND)))
    fixed = _write(tmp_path, "fixed", _report(_record(GATE), _record(BEYOND)))
    partial = _write(tmp_path, "partial", _report(_record(GATE), _record(BEYOND), complete=False, stopped="deadline"))
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"format": "loomcheck-report/1"')
    assert main(["diff", base, worse]) == 1
    assert f"newly failing (1):\n  {BEYOND}: pass -> fail" in capsys.readouterr().out
    assert main(["diff", base, fixed]) == 0
    assert f"fixed (1):\n  {GATE}: fail -> pass" in capsys.readouterr().out
    assert main(["diff", base, partial]) == 2
    assert "PARTIAL: deadline" in capsys.readouterr().out
    # A run stopped early leaves invariants it never reached in error: unknown, not newly failing.
    stopped = _write(tmp_path, "stopped", _report(_failing(GATE), _record(BEYOND, "error", message="no check ran for "
                                                  "this invariant (the run stopped early)"), complete=False,
                                                  stopped="interrupted"))
    assert main(["diff", base, stopped]) == 2
    assert f"unknown (an error in the partial candidate) (1):\n  {BEYOND}: pass -> error" in capsys.readouterr().out
    still_worse = _write(tmp_path, "still-worse", _report(_failing(GATE), _failing(BEYOND), complete=False))
    assert main(["diff", base, still_worse]) == 1  # a violation outranks partiality
    assert main(["diff", base, str(garbage)]) == 2
    assert main(["diff", base, str(tmp_path / "nowhere.json")]) == 3
    assert "no such report file" in capsys.readouterr().out
    assert main(["diff", str(garbage), base]) == 3
    assert main(["diff", base]) == 3


def test_matrix_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _write(tmp_path, "one", _report(_failing(GATE)))
    two = _write(tmp_path, "two", _report(_record(GATE), name="other"))
    out = tmp_path / "site" / "matrix.html"
    assert main(["matrix", one, two, "--out", str(out)]) == 0
    html = out.read_text()
    assert html.count("<tr id=") == 1 and f'href="../one/counterexamples/{GATE}.json"' in html
    assert main(["matrix", one, str(tmp_path / "missing.json"), "--out", str(out)]) == 3
    assert "missing.json" in capsys.readouterr().out


def test_a_manifests_not_applicable_entry_is_reported_with_its_reason_and_not_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _manifest_file(tmp_path, f'[[not-applicable]]\ninvariant = "{GATE}"\nreason = "this kernel has no gates"\n')
    manifest = load_manifest(path)
    assert manifest.not_applicable_reason(GATE) == "this kernel has no gates"
    again = tmp_path / "again.toml"
    again.write_text(dump_manifest(manifest))
    assert load_manifest(again) == manifest
    code = main(["run", "--impl", "reference:memory", "--only", GATE, "fold.resume-payloads-ordered",
                 "--manifest", str(path), "--report", str(tmp_path / "r")])
    capsys.readouterr()
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    records = {r["id"]: r for r in report["results"]}
    assert records[GATE]["status"] == "not-applicable" and records[GATE]["examples"] == 0
    assert records[GATE]["message"] == "the manifest: this kernel has no gates"
    assert records["fold.resume-payloads-ordered"]["status"] == "pass" and code == 0


def test_a_message_quoting_a_lone_surrogate_is_written_escaped(tmp_path: Path) -> None:
    """A peer's exception may quote a hostile name; the report must still be written."""
    report = Report(implementation=Implementation(spec="x", name="x", version="1", eventSchema="1.20.0"),
                    profile="ci", suiteVersion="0", started="now",
                    findings=[Finding(kind="implementation-error", message="bad \ud800")])
    report.findings[0].message = "worse \udfff"  # as the runner fills it in
    write_json(report, tmp_path / "report.json")
    assert json.loads((tmp_path / "report.json").read_text())["findings"][0]["message"] == "worse \\udfff"


def test_report_json_is_one_compact_line_that_reads_back_the_same(tmp_path: Path) -> None:
    from loomcheck.reports.reading import read_report

    report = _report(_failing(GATE), _record(LEGACY))
    write_json(report, tmp_path / "report.json")
    text = (tmp_path / "report.json").read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.count("\n") == 1
    assert read_report(tmp_path / "report.json") == report


# -- root causes: the distinct ones lead every output ------------------------------------------
def _grouped() -> Report:
    from loomcheck.reports.model import RootCause

    gate = _failing(GATE)
    beyond = _failing(BEYOND, message="parked beyond")
    gate.rootCause, beyond.rootCause = GATE, GATE
    report = _report(gate, beyond, _record(LEGACY))
    report.rootCauses = [RootCause(head=GATE, adr="0057", decision="Decision", title="gate i", message=gate.message,
                                   counterexample=gate.counterexample, counterexampleOperations=3,
                                   alsoViolated=[BEYOND])]
    report.summarise()
    return report


def test_the_summary_counts_root_causes_and_the_json_keeps_them() -> None:
    report = _grouped()
    assert report.summary.rootCauses == 1 and report.summary.failed == 2
    again = Report.model_validate_json(report.model_dump_json())
    assert again.rootCauses[0].alsoViolated == [BEYOND] and again.results[1].rootCause == GATE


def test_markdown_and_html_lead_with_the_root_causes(tmp_path: Path) -> None:
    report = _grouped()
    text = render_markdown(report)
    assert "**1 root cause: 1 passed, 2 failed" in text
    causes = text[text.index("### 1 root cause of 2 failing invariants"):text.index("### Not passing")]
    assert f"`{GATE}`" in causes and f"`{BEYOND}`" in causes  # the head, and what its counterexample also violates
    write_json(report, tmp_path / "report.json")
    html = render_matrix([(tmp_path / "report.json", report)], html_dir=tmp_path)
    assert "1 root cause of 2 failing invariants" in html and html.index("root cause of") < html.index("<table>")
    assert f"reported under the root cause {GATE}" in html


def test_junit_names_the_root_causes(tmp_path: Path) -> None:
    from loomcheck.reports.writers import write_junit

    write_junit(_grouped(), tmp_path / "junit.xml")
    xml = (tmp_path / "junit.xml").read_text()
    assert 'name="root-causes" value="1"' in xml
    assert f'name="root-cause-1" value="{GATE}; also violated by this counterexample: {BEYOND}"' in xml
    assert f"root cause: {GATE}" in xml
