"""A manifest is applied once, by the runner: every report a run writes carries its
expectations, the partial one an interrupted run leaves included, and nothing is left for the
command line to rewrite afterwards."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import pytest

from interrupting import interrupt, running
from loomcheck.cli import main
from loomcheck.reports.markdown import render_markdown
from loomcheck.reports.model import Report
from loomcheck.reports.writers import write_json
from loomcheck.run.manifest import apply_manifest, load_manifest

LEGACY = "gate.legacy-single-payload"
GATE = "gate.i-receives-entry-i"


def _manifest(tmp_path: Path, invariant: str, reason: str) -> Path:
    path = tmp_path / "manifest.toml"
    path.write_text(f'[[expected]]\ninvariant = "{invariant}"\nreason = "{reason}"\n', encoding="utf-8")
    return path


def _read(path: Path) -> Report:
    return Report.model_validate_json(path.read_text(encoding="utf-8"))


def test_the_report_a_run_writes_is_the_one_a_rewrite_with_the_manifest_gives(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """What `loomcheck run --manifest` used to do after the run (apply the manifest to the report
    and write it again) now changes nothing: the runner wrote it so."""
    manifest = _manifest(tmp_path, LEGACY, "no fallback yet")
    report_dir = tmp_path / "r"
    code = main(["run", "--impl", "python:mutants.no_legacy_fallback:make", "--only", LEGACY,
                 "--report", str(report_dir), "--manifest", str(manifest)])
    assert code == 0, capsys.readouterr().out
    written = (report_dir / "report.json").read_text(encoding="utf-8")
    report = _read(report_dir / "report.json")
    (record,) = report.results
    assert (record.status, record.manifest) == ("fail", "expected-failure")
    assert record.expected is not None and record.expected.reason == "no fallback yet"
    apply_manifest(report, load_manifest(manifest))
    write_json(report, tmp_path / "rewritten" / "report.json")
    assert (tmp_path / "rewritten" / "report.json").read_text(encoding="utf-8") == written
    assert render_markdown(report) == (report_dir / "summary.md").read_text(encoding="utf-8")


def test_a_partial_report_carries_the_manifests_expectations(tmp_path: Path) -> None:
    """Read while the run goes, and again after the user's SIGINT stopped it."""
    manifest = _manifest(tmp_path, GATE, "two gates are not supported yet")
    report_dir = tmp_path / "report"
    argv = [sys.executable, "-m", "loomcheck", "run", "--impl", "reference:memory", "--report", str(report_dir),
            "--manifest", str(manifest)]
    with running(argv, cwd=tmp_path) as harness:
        deadline = time.monotonic() + 120
        while not (report_dir / "summary.md").is_file() and harness.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the placeholder writes report.json only; the runner writes both, once hello is said
        assert (report_dir / "summary.md").is_file(), "the run never wrote its own report"
        midway = _read(report_dir / "report.json")
        stopped = interrupt(harness, signal.SIGINT, report_dir)
    for report in (midway, stopped):
        assert not report.complete
        record = next(r for r in report.results if r.id == GATE)
        assert record.expected is not None and record.expected.reason == "two gates are not supported yet"
