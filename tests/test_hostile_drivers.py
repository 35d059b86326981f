"""In-process subjects can never make the harness lie: whatever a Python driver raises
(SystemExit, GeneratorExit, KeyboardInterrupt, a BaseException of its own, an exception
that cannot be printed) and whatever it returns (a value that contains itself, one nested
2,000 deep) is the implementation's finding in a valid report, and what the harness hands
it is a copy (tests/fakes/hostile.py). Only the user's SIGINT or SIGTERM interrupts a run:
at any moment, it leaves a valid partial report and exit 2."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.reports.model import Report

HOSTILE = Path(__file__).parent / "fakes" / "hostile.py"
ONLY = "log.append-only"  # judged by the state machine, the explorer and the regression logs


@dataclass(frozen=True)
class Case:
    factory: str
    code: int            # the exit status
    finding: str | None  # a text of the implementation-error finding; None: no finding at all
    reason: str | None = None


CASES = [
    # A factory that cannot make a driver is a tool error (exit 3), whatever it raises, as RuntimeError is.
    Case("factory_exits", 3, "the factory raised SystemExit: 0"),
    Case("hello_escapes", 2, "hello: raised Escape: hello, and goodbye"),
    Case("start_exits", 2, "raised SystemExit: 0"),
    Case("read_state_generator_exit", 2, "raised GeneratorExit"),
    Case("resume_escapes", 2, "raised Escape: not an Exception"),
    Case("define_interrupts", 2, "raised KeyboardInterrupt"),
    Case("start_unprintable", 2, "raised <UnprintableError whose str() raised ValueError>"),
    Case("close_exits", 2, "close: raised SystemExit: 3"),
    Case("mutating_fold", 0, None),  # handed a copy: its scribbles are its own, and its fold is right
    Case("self_referential_log", 2, "contains itself", "invalid-message"),
    Case("deep_state", 2, "nested deeper than", "invalid-message"),
]


def run_in_process(tmp_path: Path, factory: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Report, str]:
    try:
        code = main(["run", "--impl", f"python:{HOSTILE}:{factory}", "--only", ONLY, "--profile", "peers-slow",
                     "--report", str(tmp_path)])
    except BaseException as escaped:  # noqa: BLE001 - what the harness let through is the failure under test
        pytest.fail(f"{type(escaped).__name__} escaped `loomcheck run`: {escaped!r}")
    out = capsys.readouterr().out
    return code, Report.model_validate_json((tmp_path / "report.json").read_text(encoding="utf-8")), out


@pytest.mark.parametrize("case", CASES, ids=[c.factory for c in CASES])
def test_a_hostile_driver_is_the_implementations_finding(case: Case, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, report, out = run_in_process(tmp_path, case.factory, capsys)
    assert code == case.code, out
    assert "Traceback" not in out
    assert report.stopped != "interrupted"  # the driver's KeyboardInterrupt is no user's Ctrl-C
    assert not [f for f in report.findings if f.kind == "suite-error"], report.findings
    errors = [f for f in report.findings if f.kind == "implementation-error"]
    if case.finding is None:
        assert report.complete and not report.findings and {r.status for r in report.results} == {"pass"}, report
        return
    assert any(case.finding in f.message for f in errors), [f.message for f in errors]
    if case.reason is not None:
        assert any(f.reason == case.reason for f in errors if case.finding in f.message), errors
    # No invariant passes on a check that never ran: a pass was judged by some example.
    assert all(r.examples > 0 for r in report.results if r.status == "pass"), report.results


def test_a_kernel_module_that_exits_on_import_is_a_tool_error(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "exits.py"
    module.write_text("raise SystemExit(0)\n")
    try:
        code = main(["run", "--impl", f"python:{module}:make", "--only", ONLY, "--report", str(tmp_path / "r")])
    except BaseException as escaped:  # noqa: BLE001
        pytest.fail(f"{type(escaped).__name__} escaped `loomcheck run`: {escaped!r}")
    out = capsys.readouterr().out
    assert code == 3 and "raised SystemExit: 0" in " ".join(out.split()), out


# -- the user's signals ----------------------------------------------------------------------
def catches(pid: int, signum: int) -> bool:
    """Whether the process has a handler for `signum` (Linux: SigCgt in /proc/PID/status)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)
    return bool(mask >> (signum - 1) & 1)


# (signal, a moment after loomcheck's handlers are installed, drawn in this band of seconds): two
# in the first half second (the imports, the catalogue, the factory), two in the state machine.
# The handlers are the first thing `python -m loomcheck` does; before that the interpreter is
# still starting (site, an editable install's import hook) and Python's defaults hold.
MOMENTS = [(signal.SIGINT, (0.05, 0.25)), (signal.SIGTERM, (0.25, 0.5)), (signal.SIGINT, (1.0, 3.0)),
           (signal.SIGTERM, (1.0, 3.0))]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads SigCgt from /proc")
@pytest.mark.parametrize("signum,band", MOMENTS, ids=[f"{signal.Signals(s).name}-{a}-{b}s" for s, (a, b) in MOMENTS])
def test_a_signal_at_any_moment_leaves_a_partial_report_and_exit_2(signum: int, band: tuple[float, float],
                                                                   tmp_path: Path) -> None:
    delay = random.uniform(*band)
    report = tmp_path / "report"
    harness = subprocess.Popen([sys.executable, "-m", "loomcheck", "run", "--impl", "reference:memory", "--only",
                                "gate.", "--profile", "ci", "--report", str(report)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not catches(harness.pid, signal.SIGTERM) and harness.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert harness.poll() is None, "the run ended before it was signalled"
        time.sleep(delay)
        assert harness.poll() is None, f"the run ended within {delay:.2f} s: choose a longer one"
        harness.send_signal(signum)
        out, err = harness.communicate(timeout=60)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.communicate()
    assert harness.returncode == 2, f"{delay:.2f} s: {out}{err}"
    assert "Traceback" not in out + err, err
    written = Report.model_validate_json((report / "report.json").read_text(encoding="utf-8"))
    assert (written.complete, written.stopped) == (False, "interrupted"), f"{delay:.2f} s: {written.stopped}"
