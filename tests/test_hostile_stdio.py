"""Hostile subjects over stdio: programs that fork and exit, flood stdout with lines or
bytes, answer in UTF-16, nest an answer 2 000 deep, answer too late or too long. Each
is a finding with its reason (docs/protocol.md), `loomcheck run` ends with its exit
code and a valid report, partial or complete as the case says, and no process the
subject started outlives the run. A watchdog kills the subject's processes if the
harness has not finished in time, so a harness that would hang fails instead."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from loomcheck.cli import main
from loomcheck.protocol import wire
from loomcheck.protocol.child import CHUNK, ChildProcess, Fault, Limits
from loomcheck.reports.model import Report
from interrupting import interrupt, running

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fakes" / "stdio_kernel.py"
WATCHDOG_SECONDS = 60    # far beyond what any case takes; only a harness that hangs meets it
INVARIANT = "resume.kernel-namespace"  # needs no feature: the hostile hello below declares none
STATEFUL = "gate.completes-after-n-answers"
MAX_LINE = 1024 * 1024

# Every program answers through these; each records its pid (and its children's) for the test's eyes.
PRELUDE = '''
import json, os, subprocess, sys, time
HELLO = {"protocol": "loomcheck-driver/1", "name": "hostile", "version": "0", "eventSchema": "1.20.0",
         "features": []}
def record(pid):
    with open(os.environ["HOSTILE_PIDS"], "a") as pids:
        pids.write(f"{pid}\\n")
def send(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
def answer(message, result, encoding="utf-8"):
    send((json.dumps({"id": message["id"], "result": result}) + "\\n").encode(encoding))
def after_hello():
    """Answers hello; returns the next request."""
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        if message["op"] != "hello":
            return message
        answer(message, HELLO)
    sys.exit(0)
record(os.getpid())
'''

# A child keeps stdin, stdout and stderr open; the program itself exits at once.
FORK_THEN_EXIT = '''
after_hello()
record(subprocess.Popen(["sleep", "60"]).pid)
sys.exit(3)
'''
# Lines nobody asked for, from the first instant, forever.
PURE_FLOOD = '''
while True:
    send(b'{"id":0,"result":null}\\n' * 64)
'''
# Few lines, each under --max-line, together far beyond the bound on unread bytes.
BYTE_FLOOD = '''
line = b'{"id":0,"result":"' + b"x" * 900_000 + b'"}\\n'
for _ in range(16):
    send(line)
time.sleep(60)
'''
# A well-formed hello in UTF-16 (big-endian, no BOM: its newline ends a line where UTF-8's would).
UTF_16 = '''
for raw in sys.stdin.buffer:
    answer(json.loads(raw), HELLO, "utf-16-be")
'''
SLOW_ANSWER = '''
after_hello()
time.sleep(60)
'''
OVERSIZED_LINE = '''
message = after_hello()
answer(message, "x" * (2 * 1024 * 1024))
time.sleep(60)
'''


@dataclass(frozen=True)
class Case:
    name: str
    program: str         # Python run after PRELUDE, or "fake:MODE" for tests/fakes/stdio_kernel.py
    reason: str          # the finding's reason
    says: str            # a pattern its message must match
    exit_code: int       # of `loomcheck run`
    complete: bool       # report.json: the run finished (True) or stopped, partial (False)
    only: list[str] = field(default_factory=lambda: [INVARIANT])
    restarts: int = 0    # --restarts: 0 stops the run at the first fault
    children: int = 0    # processes the subject starts besides its own


# A fault after hello ends the state machine with a finding, and the run completes without what needs the
# process (report complete); a fault at hello leaves nothing to run (report partial).
CASES = [
    Case("fork-then-exit", FORK_THEN_EXIT, "crash",
         r"died during \S+ \(request \d+\): exit status 3; a process it started holds its stdout", 2, True, children=1),
    Case("pure-flood", PURE_FLOOD, "flood", r"hello \(request 1\): .*nobody asked for", 2, False),
    Case("byte-flood", BYTE_FLOOD, "flood", r"hello \(request 1\): .*nobody asked for", 2, False),
    Case("utf-16", UTF_16, "garbage", r"hello \(request 1\).*not UTF-8: it holds NUL bytes \(UTF-16 or UTF-32\?\)",
         2, False),
    # One read-log answered 2 000 deep, then a kernel that behaves: the run goes on with a new process.
    Case("deep-payload", "fake:deep", "invalid-message",
         r"read-log \(request \d+\): the answer is nested deeper than 256 arrays/objects", 2, True, [STATEFUL], 1),
    Case("slow-answer", SLOW_ANSWER, "hang", r"no answer to \S+ \(request \d+\) within 2 s \(--timeout\)", 2, True),
    Case("oversized-line", OVERSIZED_LINE, "oversized", r"wrote a line longer than 1048576 bytes \(--max-line\)", 2,
         True),
]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"  # a zombie is dead
    except (OSError, IndexError):
        return False


class Pids:
    """The pids the subject's processes recorded; a watchdog that kills them all once its time is up."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fired = False
        self.timer = threading.Timer(WATCHDOG_SECONDS, self.kill_all, kwargs={"fired": True})
        self.timer.daemon = True

    def read(self) -> list[int]:
        return [int(n) for n in self.path.read_text().split()] if self.path.exists() else []

    def kill_all(self, fired: bool = False) -> None:
        self.fired = self.fired or fired
        for pid in self.read():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def pids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Pids]:
    watched = Pids(tmp_path / "pids")
    monkeypatch.setenv("HOSTILE_PIDS", str(watched.path))
    monkeypatch.setenv("STDIO_FAKE_PIDS", str(watched.path))
    watched.timer.start()
    yield watched
    watched.timer.cancel()
    watched.kill_all()  # whatever the harness left behind must not outlive the test


def command(case: Case, tmp_path: Path) -> str:
    if case.program.startswith("fake:"):
        return shlex.join([sys.executable, str(FAKE), case.program[len("fake:"):]])
    program = tmp_path / f"{case.name}.py"
    program.write_text(PRELUDE + case.program, encoding="utf-8")
    return shlex.join([sys.executable, "-I", "-S", str(program)])  # -I -S: a start of milliseconds


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_subject_is_a_finding_and_the_run_ends(case: Case, tmp_path: Path, pids: Pids) -> None:
    code = main(["run", "--impl", "stdio:" + command(case, tmp_path), "--only", *case.only, "--report",
                 str(tmp_path / "report"), "--timeout", "2", "--restarts", str(case.restarts),
                 "--max-line", str(MAX_LINE)])
    assert not pids.fired, "the harness hung until the watchdog killed the subject"
    assert code == case.exit_code
    report = Report.model_validate_json((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert report.complete is case.complete, report.stopped
    assert (report.stopped is None) is case.complete
    messages = [f.message for f in report.findings if f.reason == case.reason]
    assert len(messages) == 1, [(f.reason, f.message[:200]) for f in report.findings]
    assert re.search(case.says, messages[0], re.DOTALL), messages[0]
    assert not [f for f in report.findings if f.kind == "suite-error"], report.findings
    launched = pids.read()
    assert len(launched) == case.restarts + 1 + case.children
    assert not [pid for pid in launched if alive(pid)], "a process the subject started outlived the run"


# -- the bound on unread bytes: the reader stops reading, memory does not grow ----------------
def test_unread_bytes_are_bounded_and_the_reader_stops(tmp_path: Path, pids: Pids) -> None:
    program = tmp_path / "byte-flood.py"
    program.write_text(PRELUDE + BYTE_FLOOD, encoding="utf-8")
    limits = Limits(max_line=MAX_LINE)
    process = ChildProcess([sys.executable, "-I", "-S", str(program)], dict(os.environ), limits)
    try:
        process.stdout_reader.join(timeout=WATCHDOG_SECONDS)  # it stops by itself, at the bound
        assert not process.stdout_reader.is_alive(), "the reader went on reading"
        items = []
        while (item := process.take(0)) is not None:
            items.append(item)
    finally:
        process.kill()
    lines = [item for item in items if isinstance(item, bytes)]
    assert isinstance(items[-1], Fault) and items[-1].reason == "flood", items[-1]
    assert sum(map(len, lines)) <= limits.pending_bound < 16 * 900_000
    assert process.peak_unread <= limits.pending_bound
    # What it read and dropped: at most one line past the bound, and the chunk it came in.
    assert process.bytes_read <= limits.pending_bound + MAX_LINE + 2 * CHUNK


# -- a request to a child that does not read its stdin: the write gives up at its timeout ------------
def test_a_request_the_child_never_reads_is_not_a_blocked_write(tmp_path: Path, pids: Pids) -> None:
    program = tmp_path / "deaf.py"
    program.write_text(PRELUDE + "time.sleep(60)\n", encoding="utf-8")
    process = ChildProcess([sys.executable, "-I", "-S", str(program)], dict(os.environ), Limits())
    try:
        assert process.send(b"[" * (4 * 1024 * 1024) + b"\n", 0.5) is False  # far more than a pipe holds
    finally:
        process.kill()


# -- answers are bounded data before anything looks at them --------------------------------------
@pytest.mark.parametrize("levels", [255, 256, 257, 2_000, 100_000, 5_000_000])
def test_an_answer_is_parsed_within_a_bound_on_depth(levels: int) -> None:
    line = b"[" * levels + b"]" * levels + b"\n"
    if levels <= 256:
        value = wire.loads_answer(line, max_depth=256, max_values=10 ** 6)
        for _ in range(levels - 1):
            value = value[0]
        assert value == []
    else:
        with pytest.raises(wire.TooDeep, match="nested deeper than 256 arrays/objects"):
            wire.loads_answer(line, max_depth=256, max_values=10 ** 6)


@pytest.mark.parametrize("line,says", [
    ('{"id":1,"result":null}\n'.encode("utf-16-le"), "holds NUL bytes"),
    ('{"id":1,"result":"é"}\n'.encode("utf-16-le"), "not UTF-8"),
    (b"\xfe\xff" + '{"id":1}\n'.encode("utf-16-be"), "not UTF-8"),
    (b'\xef\xbb\xbf{"id":1,"result":null}\n', "byte order mark"),
    (b'{"id":1,"result":"\xc3"}\n', "not UTF-8"),
], ids=["utf-16-le", "utf-16-le-accented", "utf-16-bom", "utf-8-bom", "truncated-utf-8"])
def test_an_answer_is_strict_utf8(line: bytes, says: str) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        wire.loads_answer(line, max_depth=256, max_values=10 ** 6)
    assert not isinstance(raised.value, wire.TooDeep)


def test_an_answer_with_too_many_values_is_refused() -> None:
    line = b"[" + b",".join([b"0"] * 1_001) + b"]\n"
    with pytest.raises(wire.TooDeep, match="more than 1000 JSON values"):
        wire.loads_answer(line, max_depth=256, max_values=1_000)
    assert len(wire.loads_answer(line, max_depth=256, max_values=1_002)) == 1_001


# -- SIGTERM while the subject hangs and a process it started (in a session of its own) holds the pipes --
ESCAPED = '''
after_hello()
record(subprocess.Popen(["sleep", "60"], start_new_session=True).pid)  # beyond the reach of a group kill
with open(os.environ["HOSTILE_HANGING"], "w") as hanging:
    hanging.write(str(os.getpid()))
time.sleep(60)
'''


def test_sigterm_ends_a_run_whose_subject_hangs_with_an_escaped_child(tmp_path: Path, pids: Pids) -> None:
    program = tmp_path / "escaped.py"
    program.write_text(PRELUDE + ESCAPED, encoding="utf-8")
    hanging = tmp_path / "hanging"
    env = {**os.environ, "HOSTILE_HANGING": str(hanging)}
    impl = "stdio:" + shlex.join([sys.executable, "-I", "-S", str(program)])
    with running([sys.executable, "-m", "loomcheck", "run", "--impl", impl, "--only", INVARIANT,
                  "--report", str(tmp_path / "report"), "--timeout", "120", "--restarts", "0"],
                 env=env, cwd=tmp_path) as harness:
        deadline = time.monotonic() + WATCHDOG_SECONDS
        while not hanging.exists() and time.monotonic() < deadline and harness.poll() is None:
            time.sleep(0.05)
        assert hanging.exists(), "the subject never started to hang"
        interrupt(harness, signal.SIGTERM, tmp_path / "report")
    leader = int(hanging.read_text())
    assert not alive(leader), "the hung subject outlived the harness"


# A kernel may keep a deep value it was handed and answer with it: the bound grows with the request.
ECHO_FOLD = '''
message = after_hello()
while message is not None:
    answer(message, {"echo": message.get("events")})
    line = sys.stdin.buffer.readline()
    message = json.loads(line) if line else None
'''


def test_an_answer_may_carry_back_what_it_was_handed_however_deep(tmp_path: Path, pids: Pids) -> None:
    from loomcheck.protocol.client import StdioDriver

    program = tmp_path / "echo.py"
    program.write_text(PRELUDE + ECHO_FOLD, encoding="utf-8")
    driver = StdioDriver([sys.executable, "-I", "-S", str(program)], Limits(timeout=5))
    try:
        driver.hello()
        deep: list = []
        for _ in range(700):  # past the fixed bound of 256 (+64), within the echoing child's own parser
            deep = [deep]
        answered = driver.fold([{"type": "X", "payload": deep}], None)
        assert answered["echo"][0]["payload"] == deep
    finally:
        driver.close()
