"""What `loomcheck run` prints, pytest's way: the verdict first and last, a passing run on one
screen by default, the per-invariant table (and its not-applicable rows) only with -v, only the
failures and the verdict with -q, failures explained at every verbosity, progress in a log a line
per phase, and no status cut short on an 80-column terminal."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from loomcheck.cli import main
from loomcheck.cli.console import NORMAL, QUIET, VERBOSE
from loomcheck.cli.run_report import print_report
from loomcheck.reports.model import Report

ROOT = Path(__file__).resolve().parents[1]
SCREEN = 24  # lines
STATUSES = ("pass", "fail", "error", "not-applicable", "hazard", "residual", "not-reproduced")


def rendered(report: Report, verbosity: int, width: int = 80) -> list[str]:
    console = Console(file=io.StringIO(), width=width, highlight=False, color_system=None)
    print_report(report, console, Path("loomcheck-report"), verbosity)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


@pytest.fixture(scope="module", params=["reference", "node-example"])
def passing(request: pytest.FixtureRequest) -> Report:
    """A committed report of a whole-catalogue run that passed (the Node example: 62 not applicable)."""
    return Report.model_validate_json((ROOT / "results" / request.param / "report.json").read_text(encoding="utf-8"))


def test_a_passing_run_fits_one_screen_and_says_its_verdict_first_and_last(passing: Report) -> None:
    lines = rendered(passing, NORMAL)
    assert len(lines) <= SCREEN, "\n".join(lines)
    assert lines[0].startswith("PASSED: ") and lines[-1].startswith("PASSED: "), lines
    assert f"{passing.summary.passed} passed, 0 failed" in lines[-1]
    assert "not-applicable" not in "\n".join(lines)  # its rows are -v's (and the files')
    assert any(line.startswith("report: ") for line in lines)
    assert rendered(passing, QUIET) == [lines[-1]]  # -q: the verdict alone


def test_verbose_adds_every_invariants_row_unabridged_at_80_columns(passing: Report) -> None:
    lines = rendered(passing, VERBOSE, width=80)
    text = "\n".join(lines)
    for record in passing.results:
        row = next((line for line in lines if line.startswith(record.id + " ")), None)
        assert row is not None, record.id
        assert re.search(rf"\s{re.escape(record.status)}\s", row), row  # the status whole, on the id's line
    assert text.count("not-applicable") == passing.summary.notApplicable
    assert "…" not in text
    assert lines[0].startswith("PASSED: ") and lines[-1].startswith("PASSED: ")


def test_a_failing_run_explains_its_failures_at_every_verbosity(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/mutants/any_gate.py answers the parked gate with any event name (resume.gate-mismatch)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.delenv("COLUMNS", raising=False)
    argv = ["run", "--impl", "python:mutants.any_gate:make", "--only", "resume.gate-mismatch", "gate.i-receives-entry-i",
            "--profile", "peers-slow", "--report", str(tmp_path)]
    assert main(argv) == 1
    lines = capsys.readouterr().out.splitlines()
    # stdout is not a terminal here: progress is a line when a phase begins, and again only after a
    # minute more of it (a loaded machine can make a phase last that long).
    progress = [line for line in lines if re.match(r"\[\d+:\d\d\] ", line)]
    assert any(" state machine " in line for line in progress), progress
    last_seen: dict[str, int] = {}
    for line in progress:
        stamp, rest = line[1:].split("] ", 1)
        minutes, seconds = stamp.split(":")
        at, phase = int(minutes) * 60 + int(seconds), rest.rsplit(" ", 1)[0]
        assert phase not in last_seen or at - last_seen[phase] >= 60, progress
        last_seen[phase] = at
    shown = lines[len(progress):]
    assert shown[0].startswith("FAILED: ") and shown[-1].startswith("FAILED: "), shown
    # A log's fixed width; the lines holding a path or a command are never broken, so they can be copied.
    unbroken = ("counterexample (", "replay: ", "report: ", "a reproducer")
    assert all(len(line) <= 100 for line in shown if not any(part in line for part in unbroken)), shown

    assert main([*argv, "-q"]) == 1
    quiet = capsys.readouterr().out.splitlines()
    assert not any(re.match(r"\[\d+:\d\d\] ", line) for line in quiet)  # no progress
    assert quiet[-1].startswith("FAILED: ") and not any(line.startswith("report: ") for line in quiet)
    report = Report.model_validate_json((tmp_path / "report.json").read_text(encoding="utf-8"))
    for verbosity, out in ((QUIET, quiet), (NORMAL, shown), (VERBOSE, rendered(report, VERBOSE, width=100))):
        text = "\n".join(out)
        assert "What ADR 0104 D1 requires instead" in text and "replay: " in text, (verbosity, text)
    assert len(quiet) < len(shown) < len(rendered(report, VERBOSE, width=100))
