"""The harness against kernels that misbehave over stdio (tests/fakes/stdio_kernel.py):
every fault of docs/protocol.md's last table is a finding with its reason and a
message that helps, the run goes on with a new process (or stops, with a partial
report, once the budget of restarts or the deadline is spent), no process is left
behind, and nothing reaches the caller as a traceback."""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.reports.model import Report
from interrupting import interrupt, running

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fakes" / "stdio_kernel.py"
STATEFUL = "gate.completes-after-n-answers"  # its state machine meets the fault at the first resume (or read-log)
REPLAYED = "gate.legacy-single-payload"      # regression logs only: replayed after the fault, by a new process
QUICK = [REPLAYED, "typed.sharp-edge", "typed.rehydration-not-validated"]  # regression logs only: seconds, even slow


def fake(mode: str, *extra: str) -> str:
    return "stdio:" + shlex.join([sys.executable, str(FAKE), mode, *extra])


def run(tmp_path: Path, impl: str, only: list[str], *options: str) -> tuple[int, Report]:
    """`loomcheck run` in this process; later options override the defaults given here."""
    code = main(["run", "--impl", impl, "--only", *only, "--report", str(tmp_path / "report"), "--timeout", "1",
                 "--restarts", "2", "--max-line", "1048576", *options])
    assert isinstance(code, int)
    return code, Report.model_validate_json((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"  # a zombie is dead
    except (OSError, IndexError):
        return False


@pytest.fixture
def pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The pids of the fake's processes (the harness passes its environment on)."""
    path = tmp_path / "pids"
    monkeypatch.setenv("STDIO_FAKE_PIDS", str(path))

    def read() -> list[int]:
        return [int(line) for line in path.read_text().split()] if path.exists() else []
    yield read
    for pid in read():  # a process the harness failed to kill must not outlive the test
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def findings(report: Report, reason: str) -> list[str]:
    return [f.message for f in report.findings if f.reason == reason]


# -- one fault, once per run: a finding, then a new process and the run goes on ----------------
ONCE = [
    # mode, the finding's reason, what its message must say, how the regression-only invariant ends
    ("hang", "hang", [r"no answer to resume \(request \d+\) within 1 s \(--timeout\)"], "pass"),
    ("crash", "crash", [r"died during resume \(request \d+\): exit status 3", "stdio-fake: starting the resume",
                        "cannot resume '.+': out of cheese"], "pass"),
    ("garbage", "garbage", [r"answered resume \(request \d+\) with a line that is not JSON", "OK, resumed!"], "pass"),
    ("wrong-id", "wrong-id", [r"answered resume \(request \d+\) with id \d+"], "pass"),
    ("oversized", "oversized",
     [r"^state machine: resume \(request \d+\): wrote a line longer than 1048576 bytes \(--max-line\)"], "pass"),
    ("flood", "flood", [r"resumed, line 0.* before read-log \(request \d+\) was sent: nobody asked for it"], "pass"),
    # Seen exited before the next request, or while it is sent, or as it waits for the answer: a crash.
    ("exit-between", "crash", [r"exit status 0\)?; stderr was empty"], "pass"),
    # Its first process exits after a resume; the second lies, during the first regression log replayed.
    ("lying-hello", "lying-hello", ["not-the-kernel-you-started", "when first started", "after a restart"], "error"),
]


@pytest.mark.parametrize("mode,reason,says,replayed", ONCE, ids=[case[0] for case in ONCE])
def test_a_fault_is_a_finding_and_the_run_goes_on(mode: str, reason: str, says: list[str], replayed: str,
                                                   tmp_path: Path, pids) -> None:
    code, report = run(tmp_path, fake(mode), [STATEFUL, REPLAYED])
    assert code == 2
    assert report.complete and report.stopped is None, report.stopped
    messages = findings(report, reason)
    assert len(messages) == 1, report.findings
    for pattern in says:
        assert re.search(pattern, messages[0]), messages[0]
    if mode == "wrong-id":  # which id was expected, and which came
        expected, came = map(int, re.search(r"request (\d+)\) with id (\d+)", messages[0]).groups())
        assert came == expected + 1000
    assert "restart-budget" not in {f.reason for f in report.findings}
    records = {r.id: r for r in report.results}
    assert records[STATEFUL].status == "error"
    assert records[REPLAYED].status == replayed, records[REPLAYED]
    assert records[STATEFUL].examples > 0, records[STATEFUL]
    if replayed == "pass":  # the regression logs ran after the fault (a lying restart ends its log unjudged)
        assert records[REPLAYED].examples > 0, records[REPLAYED]
    launched = pids()
    assert len(launched) == (3 if mode == "lying-hello" else 2)  # one restart per fault
    assert not any(alive(pid) for pid in launched)


# -- a fault in every process: the budget of restarts is spent, the report is partial ------------
@pytest.mark.parametrize("mode,reason", [("hang", "hang"), ("crash", "crash")])
def test_a_fault_in_every_process_spends_the_budget(mode: str, reason: str, tmp_path: Path, pids) -> None:
    code, report = run(tmp_path, fake(mode, "every-process"), [STATEFUL, REPLAYED])
    assert code == 2
    assert not report.complete
    assert report.stopped and "budget of 2 restarts" in report.stopped and "spent (--restarts)" in report.stopped
    assert len(findings(report, "restart-budget")) == 1
    assert len(findings(report, reason)) == 3  # the first process and both restarts, each a finding
    assert len(pids()) == 3 and not any(alive(pid) for pid in pids())


# -- a hello that is not one: the run cannot start ------------------------------------------------
def test_a_hello_in_another_protocol_stops_the_run(tmp_path: Path, pids) -> None:
    code, report = run(tmp_path, fake("bad-hello"), [STATEFUL, REPLAYED])
    assert code == 2
    assert not report.complete
    [message] = findings(report, "bad-hello")
    assert "speaks 'loomcheck-driver/2', not loomcheck-driver/1" in message
    assert all(r.status == "error" and r.examples == 0 for r in report.results)
    assert len(pids()) == 1 and not any(alive(pid) for pid in pids())


# -- not faults: slow, or loud on stderr, and correct: they pass ------------------------------------
@pytest.mark.parametrize("mode", ["slow", "stderr-flood"])
def test_a_slow_or_noisy_kernel_passes(mode: str, tmp_path: Path, pids) -> None:
    code, report = run(tmp_path, fake(mode), QUICK, "--restarts", "0")  # no restart needed, none allowed
    assert code == 0, report.findings
    assert report.complete and not report.findings
    assert all(r.status == "pass" and r.examples > 0 for r in report.results)
    assert len(pids()) == 1
    if mode == "slow":
        assert report.wallSeconds >= 2  # ~70 requests, 50 ms each: it was slower, and still passed


def test_the_deadline_stops_a_slow_kernel_with_a_partial_report(tmp_path: Path, pids) -> None:
    began = time.monotonic()
    code, report = run(tmp_path, fake("slow"), [STATEFUL, REPLAYED], "--deadline", "3", "--timeout", "30",
                       "--restarts", "10")
    assert code == 2
    assert time.monotonic() - began < 15  # it stopped at the deadline, not at a timeout
    assert not report.complete
    assert report.stopped and "deadline" in report.stopped
    assert findings(report, "deadline")
    assert not any(alive(pid) for pid in pids())


# -- --validate-protocol --------------------------------------------------------------------------
def test_the_reference_served_over_stdio_validates(tmp_path: Path) -> None:
    impl = "stdio:" + shlex.join([sys.executable, "-m", "loomcheck", "serve"])
    code, report = run(tmp_path, impl, QUICK, "--validate-protocol", "--restarts", "0")
    assert code == 0, report.findings
    assert report.complete and report.implementation.transport == "stdio"
    assert all(r.status == "pass" and r.examples > 0 for r in report.results)


def test_a_message_the_schema_rejects_is_an_invalid_message(tmp_path: Path, pids) -> None:
    code, report = run(tmp_path, fake("invalid"), [STATEFUL, REPLAYED], "--validate-protocol")
    assert code == 2
    assert report.complete
    [message] = findings(report, "invalid-message")
    assert re.search(r"^state machine: read-log \(request \d+\): results\.schema\.json#/properties/read-log: at 0: "
                     r"'seq' is a required property", message), message
    assert {r.id: r.status for r in report.results}[REPLAYED] == "pass"
    assert len(pids()) == 2


# -- an interrupted run leaves a valid, partial report -----------------------------------------------
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_leaves_a_partial_report(signum: int, tmp_path: Path) -> None:
    hanging = tmp_path / "hanging"
    env = {**os.environ, "STDIO_FAKE_HANGING": str(hanging)}
    child = None
    with running([sys.executable, "-m", "loomcheck", "run", "--impl", fake("hang"), "--only", STATEFUL,
                  "--report", str(tmp_path / "report"), "--timeout", "120"], env=env, cwd=tmp_path) as harness:
        deadline = time.monotonic() + 60
        while child is None and time.monotonic() < deadline and harness.poll() is None:
            text = hanging.read_text() if hanging.exists() else ""
            child = int(text) if text.strip().isdigit() else None
            time.sleep(0.05)
        assert child is not None, "the fake never started to hang"
        interrupt(harness, signum, tmp_path / "report")
    time.sleep(0.2)
    try:
        assert not alive(child), "the hung kernel outlived the harness"
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)
