"""The stdio transport: a driver (contract/driver.py) that runs an implementation
as a child process and speaks the driver protocol to it (docs/protocol.md).

The child is untrusted. Whatever it does (hang, die, exit leaving a process it
started holding its pipes, write garbage or another encoding than UTF-8, answer
the wrong request or too deeply, write a line without end, flood stdout or
stderr with lines or bytes, change its hello) becomes an `ImplementationFailed`
with a `reason`, never a hang, a traceback of the harness, or memory without
bound: every wait has a timeout, and what is read unasked is bounded. The
process is then killed; the next call starts a new one, within a budget of
restarts, after which the run stops (`RunAborted`) and its report says it is
partial."""

from __future__ import annotations

import os
import queue
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any, Iterator

from loomcheck.contract.driver import JSON, Outcome
from loomcheck.contract.jsondata import ENVELOPE
from loomcheck.contract.session import ImplementationFailed, RunAborted
from loomcheck.protocol import wire
from loomcheck.protocol.messages import OUTCOMES, PROTOCOL

MiB = 1024 * 1024
CHUNK = 64 * 1024     # bytes read from a pipe at once: what a pipe's buffer holds
POLL_SECONDS = 0.1    # how often a wait looks up from its queue: a reader told to stop, a leader gone
FOLLOW_SECONDS = 0.2  # after a line that answers nothing: whether more come, unasked (a flood)
HELD = "a process it started holds its stdout (its process group is killed)"


@dataclass(frozen=True)
class Limits:
    """What the harness tolerates from a child (the command line's --timeout, --max-line, --restarts)."""

    timeout: float = 30.0          # seconds for one answer
    max_line: int = 64 * MiB       # bytes in one line
    restarts: int = 3              # new processes after the first, per run
    stderr_lines: int = 20         # kept for a crash report
    pending_lines: int = 1_000     # unread lines on stdout before it is a flood
    pending_bytes: int | None = None  # unread bytes on stdout before it is a flood; None: twice max_line
    max_depth: int = 256           # arrays/objects an answer may nest, itself included (docs/protocol.md)
    max_values: int = 1_000_000    # JSON values in one answer
    hello_timeout: float = 60.0    # a slow start (an interpreter, a JIT) is not a hang
    exit_grace: float = 0.5        # seconds the last lines of a leader that exited may take to arrive

    @property
    def pending_bound(self) -> int:
        return self.pending_bytes if self.pending_bytes is not None else 2 * self.max_line


@dataclass
class Fault:
    reason: str
    detail: str


class _Process:
    """One child: its pipes, a reader thread per stream, and nothing else. The readers
    own stdout and stderr (they close them; closing a pipe a reader is blocked on
    would wait for the reader, forever if a process the child started holds the
    pipe); the caller owns stdin, written without blocking."""

    def __init__(self, argv: list[str], env: dict[str, str], limits: Limits) -> None:
        self.limits = limits
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, start_new_session=True,  # its own group: a kill reaches its children
                                     bufsize=0)  # raw pipes: nothing buffered that a close would have to flush
        assert self.proc.stdin is not None
        os.set_blocking(self.proc.stdin.fileno(), False)
        self.lines: queue.Queue[bytes | Fault] = queue.Queue()
        self.stderr: deque[str] = deque(maxlen=limits.stderr_lines)
        self.stopping = threading.Event()
        self._unread = threading.Lock()
        self.unread_bytes = 0  # in lines queued and not taken
        self.unread_lines = 0
        self.peak_unread = 0
        self.bytes_read = 0
        self.stdout_reader = threading.Thread(target=self._read_stdout, daemon=True)
        self.stdout_reader.start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    # -- the readers' side -------------------------------------------------------------
    def _chunks(self, stream: Any) -> Iterator[bytes]:
        """What the pipe holds, chunk by chunk, until its end or until told to stop; then it is closed."""
        fd = stream.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        try:
            while not self.stopping.is_set():
                if not poller.poll(POLL_SECONDS * 1000):
                    continue
                try:
                    chunk = os.read(fd, CHUNK)
                except OSError:
                    return
                if not chunk:
                    return
                yield chunk
        finally:
            stream.close()

    def _read_stdout(self) -> None:
        with closing(self._chunks(self.proc.stdout)) as chunks:
            self._lines_of(chunks)

    def _lines_of(self, chunks: Iterator[bytes]) -> None:
        partial = bytearray()
        for chunk in chunks:
            self.bytes_read += len(chunk)
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                line = bytes(partial) + chunk[start:end + 1] if partial else chunk[start:end + 1]
                partial.clear()
                start = end + 1
                if len(line) - 1 > self.limits.max_line:
                    return self._oversized(line)
                if not self._enqueue(line):
                    return
            partial += chunk[start:]
            if len(partial) > self.limits.max_line:
                return self._oversized(bytes(partial[:80]))
        if partial and not self._enqueue(bytes(partial)):  # a last line without its end
            return
        self.lines.put(Fault("crash", "closed its stdout"))

    def _oversized(self, line: bytes) -> None:
        self.lines.put(Fault("oversized", f"wrote a line longer than {self.limits.max_line} bytes "
                                          f"(--max-line); it begins {line[:80]!r}"))

    def _enqueue(self, line: bytes) -> bool:
        """Queue a line, or a flood and False when the unread lines would pass a bound: the
        reader then stops reading, so a child cannot make the harness hold more."""
        bound = self.limits.pending_bound
        with self._unread:
            if self.unread_lines >= self.limits.pending_lines:
                problem = f"wrote more than {self.limits.pending_lines} lines nobody asked for"
            elif self.unread_lines and self.unread_bytes + len(line) > bound:
                problem = f"wrote more than {bound} bytes nobody asked for (the bound on unread output)"
            else:
                self.unread_lines += 1
                self.unread_bytes += len(line)
                self.peak_unread = max(self.peak_unread, self.unread_bytes)
                self.lines.put(line)
                return True
        self.lines.put(Fault("flood", problem))
        return False

    def _read_stderr(self) -> None:
        partial = b""
        with closing(self._chunks(self.proc.stderr)) as chunks:
            for chunk in chunks:
                *complete, partial = (partial[-8192:] + chunk).split(b"\n")
                for raw in complete[-self.limits.stderr_lines:]:
                    self.stderr.append(raw.decode("utf-8", "replace")[:300])
        if partial:
            self.stderr.append(partial[-8192:].decode("utf-8", "replace")[:300])

    # -- the caller's side -------------------------------------------------------------
    def send(self, line: bytes, timeout: float) -> bool:
        """Write a request; False if the child did not read it within `timeout` (a full pipe
        would block a plain write forever). OSError when stdin is closed."""
        assert self.proc.stdin is not None
        fd = self.proc.stdin.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        view = memoryview(line)
        end = time.monotonic() + timeout
        while view:
            left = end - time.monotonic()
            if left <= 0:
                return False
            if poller.poll(min(left, POLL_SECONDS) * 1000):
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    pass
        return True

    def pending(self) -> bool:
        return not self.lines.empty()

    def take(self, timeout: float) -> bytes | Fault | None:
        """The next line (or the fault that ended the reader) within `timeout`, else None.
        A leader that exited is a crash even while a process it started keeps stdout open."""
        end = time.monotonic() + timeout
        exited: float | None = None
        while True:
            left = end - time.monotonic()
            try:
                item = self.lines.get(timeout=max(0.0, min(left, POLL_SECONDS)))
            except queue.Empty:
                if left <= POLL_SECONDS:
                    return None
                if exited is None and self.proc.poll() is not None:
                    exited = time.monotonic()  # its last lines may still be in the pipe
                elif exited is not None and time.monotonic() - exited >= self.limits.exit_grace:
                    return Fault("crash", HELD)
                continue
            if isinstance(item, bytes):
                with self._unread:
                    self.unread_lines -= 1
                    self.unread_bytes -= len(item)
            return item

    def kill(self) -> None:
        """SIGKILL to the whole group: no cleanup, as a machine losing power would do to it.
        The group outlives its leader while a process it started lives, so it is killed
        even when the leader is already dead (the group's id cannot be reused meanwhile)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group is empty
            pass
        except PermissionError:
            if self.proc.poll() is None:
                self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a zombie the kernel will not reap
            pass
        self.stopping.set()  # the readers close their pipes within POLL_SECONDS, whoever else holds them
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass

    def exit_status(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def stderr_tail(self) -> str:
        # Let the reader catch the last lines of a dying process: it ends at the pipe's end,
        # at once for a process already dead (a sleep here cost every deliberate kill 50 ms).
        self._stderr_reader.join(timeout=0.05)
        lines = list(self.stderr)
        return ("; last lines of stderr:\n    " + "\n    ".join(lines)) if lines else "; stderr was empty"


@dataclass
class Deployment:
    """What a restart of a durable kernel's process must be given again: its code (the
    flows defined) and its configuration. The store is the kernel's."""

    flows: dict[str, dict[str, JSON]] = field(default_factory=dict)
    config: dict[str, JSON] | None = None


class StdioDriver:
    """A driver whose implementation is a program speaking the protocol on stdio."""

    transport = "stdio"

    def __init__(self, command: str | list[str], limits: Limits = Limits(), *, validate: bool = False,
                 deadline: float | None = None, env: dict[str, str] | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("the stdio command is empty")
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.limits = limits
        self.env = env or {}
        self.deadline = deadline
        self.validator = _validator() if validate else None
        self.store_dir = tempfile.mkdtemp(prefix="loomcheck-stdio-")  # LOOMCHECK_STORE_DIR: durable kernels keep their store here
        self.process: _Process | None = None
        self.first_hello: dict[str, JSON] | None = None
        self.next_id = 1
        self.restarts_left = limits.restarts
        self.launches = 0
        self.lost: str | None = None   # why the current process holds no state the harness made
        self.deployment = Deployment()
        self.deepest_sent = 0        # arrays/objects of the deepest request so far
        self.died_in_flight = False  # the last kill(during=...) found the process dead before it answered
        # When a list: every line sent and received, as (launch, "sent"|"received", line), for `loomcheck repro`.
        self.transcript: list[tuple[int, str, bytes]] | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def _ensure(self) -> _Process:
        if self.process is not None:
            if self.process.proc.poll() is None:
                return self.process
            died = self.process
            self._fault("crash", f"exited between requests ({died.exit_status()}){died.stderr_tail()}")
        if self.launches > 0:
            if self.restarts_left <= 0:
                raise RunAborted("restarts", f"the budget of {self.limits.restarts} restarts of {self.command!r} is "
                                             f"spent (--restarts)")
            self.restarts_left -= 1
        self._launch()
        assert self.process is not None
        return self.process

    def _launch(self) -> None:
        env = {**os.environ, **self.env, "LOOMCHECK_STORE_DIR": self.store_dir}
        try:
            self.process = _Process(self.argv, env, self.limits)
        except OSError as exc:
            hint = f" ({self.argv[0]!r} is not a file here, nor on PATH)" if isinstance(exc, FileNotFoundError) else ""
            raise ImplementationFailed("start", f"cannot run {self.command!r}: {exc.strerror or exc}{hint}", "crash") from None
        self.launches += 1
        hello = self._exchange({"op": "hello", "protocol": PROTOCOL}, self.limits.hello_timeout)
        problem = _hello_problem(hello)
        if problem:
            self._fault("bad-hello", f"hello: {problem}")
        if self.first_hello is None:
            self.first_hello = hello
        elif hello != self.first_hello:
            self._fault("lying-hello", f"said {_short(self.first_hello)} when first started and {_short(hello)} "
                                       f"after a restart")

    def kill(self, during: dict[str, JSON] | None = None, after_appends: int | None = None) -> None:
        """A real crash (docs/protocol.md, feature "durable"): SIGKILL the process, now or
        while `during` runs (at its `after_appends`-th append with feature "kill-points",
        else just after it answers), then start a new one on the same store directory and
        redeploy the same flows and configuration. Neither death is a fault of the
        implementation, so neither spends the budget of restarts."""
        self.died_in_flight = False
        if during is not None:
            if after_appends is not None:
                self._request("arm-kill", {"afterAppends": after_appends})
            fields = {k: v for k, v in during.items() if k != "op"}
            try:
                self._request(str(during["op"]), fields)
            except ImplementationFailed as died:
                if died.reason != "crash":
                    raise
                self.lost = None  # the death we asked for
                self.died_in_flight = True
        if self.process is not None:
            self.process.kill()
            self.process = None
        self._launch_again_on_the_same_store()

    def _launch_again_on_the_same_store(self) -> None:
        self._launch()
        for flow, program in self.deployment.flows.items():
            self._request("define", {"flow": flow, "program": program})
        if self.deployment.config is not None:
            self._request("configure", {"config": self.deployment.config})

    def close(self) -> None:
        if self.process is not None:
            try:
                if self.process.proc.poll() is None:
                    self.process.send(b'{"id":0,"op":"shutdown"}\n', 2)
                    self.process.proc.wait(timeout=2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
            self.process.kill()
            self.process = None
        shutil.rmtree(self.store_dir, ignore_errors=True)

    # -- one exchange --------------------------------------------------------------------
    def _request(self, op: str, fields: dict[str, JSON]) -> JSON:
        if self.lost and op not in ("hello", "reset"):
            raise ImplementationFailed(op, self.lost, "restarted")
        process = self._ensure()
        if self.lost and op == "reset":
            self.lost = None
        return self._exchange({"op": op, **fields}, self.limits.timeout, process)

    def _exchange(self, message: dict[str, JSON], timeout: float, process: _Process | None = None) -> JSON:
        process = process or self.process
        assert process is not None
        ident = self.next_id
        self.next_id += 1
        request = {"id": ident, **message}
        op = message["op"]
        label = f"{op} (request {ident})"
        if self.validator is not None:
            self.validator.request(request)
        try:
            line = wire.dumps(request) + b"\n"
        except (ValueError, TypeError, RecursionError) as exc:
            raise RunAborted("suite", f"loomcheck cannot write {label} as JSON: {exc}") from None
        # An answer may carry back what it was handed (a kernel may keep the hostile corpus's deep
        # input), so the bound on answers grows with the deepest request sent, as in process.
        self.deepest_sent = max(self.deepest_sent, wire.depth(request))
        limit = self._limit(timeout)
        end = time.monotonic() + limit
        if process.pending():
            self._stray(process, process.take(0), label)
        if self.transcript is not None:
            self.transcript.append((self.launches, "sent", line))
        try:
            written = process.send(line, limit)
        except (BrokenPipeError, OSError, ValueError):
            self._fault("crash", f"{label}: its stdin is closed ({process.exit_status()}){process.stderr_tail()}", label)
        item = process.take(end - time.monotonic()) if written else None
        if item is None:
            self._no_answer(process, label, limit, written)
        if isinstance(item, Fault):
            if item.reason == "crash":
                held = f"; {item.detail}" if item.detail == HELD else ""
                self._fault("crash", f"died during {label}: {process.exit_status()}{held}{process.stderr_tail()}",
                            label)
            self._fault(item.reason, item.detail, label)  # ImplementationFailed puts the label first
        if self.transcript is not None:
            self.transcript.append((self.launches, "received", item))
        response = self._answer(process, item, ident, label)
        if self.validator is not None:
            problem = self.validator.response(response, op)
            if problem:
                self._fault("invalid-message", problem, label)
        return self._result(response, op, label)

    def _limit(self, timeout: float) -> float:
        """Seconds one exchange may take: its timeout, within the run's deadline."""
        if self.deadline is None:
            return timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RunAborted("deadline", "the run's deadline passed")
        return min(timeout, left)

    def _no_answer(self, process: _Process, label: str, limit: float, written: bool) -> Any:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            process.kill()
            self.process = None
            raise RunAborted("deadline", f"the run's deadline passed while waiting for {label}")
        what = "no answer to" if written else "did not read"
        self._fault("hang", f"{what} {label} within {limit:g} s (--timeout)", label)

    def _stray(self, process: _Process, item: bytes | Fault | None, label: str) -> Any:
        """Something came while nobody asked: a line is a flood, the end of stdout a crash."""
        if isinstance(item, Fault) and item.reason == "crash":
            self._fault("crash", f"exited before {label} was sent ({process.exit_status()}){process.stderr_tail()}",
                        label)
        self._fault("flood", f"wrote {_what(item)} before {label} was sent: nobody asked for it", label)

    def _answer(self, process: _Process, line: bytes, ident: int, label: str) -> dict[str, JSON]:
        """The response to request `ident`. A line that answers nothing and is followed by
        more, unasked, is a flood (a program printing forever), not one wrong answer."""
        try:
            response = self._parse(line, label)
            if response.get("id") != ident:
                raise ImplementationFailed(label, f"answered {label} with id {response.get('id')!r}", "wrong-id")
            return response
        except ImplementationFailed as wrong:
            if wrong.reason in ("garbage", "wrong-id"):
                follow = process.take(FOLLOW_SECONDS)
                if isinstance(follow, bytes) or (isinstance(follow, Fault) and follow.reason != "crash"):
                    self._fault("flood", f"answered {label} with more than one line, lines nobody asked for: "
                                         f"{line[:80]!r}, then {_what(follow)}", label)
            self._fault(wrong.reason or "garbage", wrong.detail, label)

    def _parse(self, line: bytes, label: str) -> dict[str, JSON]:
        """Bounded data first (docs/protocol.md): strict UTF-8, JSON, its depth and size."""
        try:
            value = wire.loads_answer(line, max(self.limits.max_depth, self.deepest_sent + ENVELOPE),
                                      self.limits.max_values)
        except wire.TooDeep as exc:
            raise ImplementationFailed(label, f"{exc} (the bound on answers)", "invalid-message") from None
        except ValueError as exc:
            raise ImplementationFailed(label, f"answered {label} with a line that is not JSON ({exc}): "
                                              f"{line[:120]!r}", "garbage") from None
        if not isinstance(value, dict):
            raise ImplementationFailed(label, f"answered {label} with {_short(value)}, not a JSON object", "garbage")
        if ("result" in value) == ("error" in value):
            raise ImplementationFailed(label, f"answered {label} with neither or both of result and error: "
                                              f"{_short(value)}", "garbage")
        return value

    def _result(self, response: dict[str, JSON], op: str, label: str) -> JSON:
        if "result" in response:
            result = response["result"]
            if op in OUTCOMES:
                crashed = result.get("crashed") if isinstance(result, dict) else None
                return Outcome.accepted(crashed=crashed is True)
            return result
        error = response["error"]
        if not isinstance(error, dict):
            self._fault("garbage", f"answered {label} with an error that is not an object: {_short(error)}", label)
        kind = error.get("kind")
        message = str(error.get("message") or "")
        if kind == "refused" and op in OUTCOMES:
            if error.get("definite") is not True:
                raise ImplementationFailed(label, f"refused, yet says the operation may have happened "
                                                  f"(definite: {error.get('definite')!r}): a refusal appends nothing")
            return Outcome.refused(str(error.get("error") or ""), str(error.get("reason") or ""), message)
        if kind == "unsupported":
            raise NotImplementedError(message or f"{op} is not supported")
        happened = "it definitely did not happen" if error.get("definite") is True else "it may have happened"
        raise ImplementationFailed(label, f"failed ({happened}): {message or _short(error)}")

    def _fault(self, reason: str, detail: str, label: str = "") -> Any:
        """Kill the process and fail the call; the next call starts another one."""
        if self.process is not None:
            self.process.kill()
            self.process = None
        self.lost = (f"the process was restarted after a fault ({reason}); what it held is gone until the next "
                     f"reset")
        raise ImplementationFailed(label or "protocol", detail, reason)

    # -- the driver interface ------------------------------------------------------------
    def hello(self) -> dict[str, JSON]:
        self._ensure()
        assert self.first_hello is not None
        hello = dict(self.first_hello)
        hello.pop("protocol", None)
        return hello

    def reset(self) -> None:
        self.deployment = Deployment()
        self._request("reset", {})

    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        outcome = self._request("define", {"flow": flow_id, "program": program})
        if outcome.ok:
            self.deployment.flows[flow_id] = program
        return outcome

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        return self._request("start", {"execution": execution_id, "flow": flow_id, "input": input})

    def resume(self, execution_id: str, event_type: str, payload: JSON, options: dict[str, JSON] | None = None) -> Outcome:
        fields = {"execution": execution_id, "type": event_type, "payload": payload}
        return self._request("resume", {**fields, "options": options} if options else fields)

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: dict[str, JSON] | None = None) -> Outcome:
        fields = {"execution": execution_id, "flow": flow_id, "type": event_type, "payload": payload}
        return self._request("resume-as", {**fields, "options": options} if options else fields)

    def configure(self, config: dict[str, JSON]) -> Outcome:
        outcome = self._request("configure", {"config": config})
        if outcome.ok:
            self.deployment.config = config
        return outcome

    def advance_clock(self, ms: int) -> list[str]:
        return self._request("advance-clock", {"ms": ms})

    def parked_at_sequence(self, execution_id: str) -> int | None:
        return self._request("parked-at-sequence", {"execution": execution_id})

    def sign(self, claim: dict[str, JSON]) -> dict[str, JSON]:
        return self._request("sign", {"claim": claim})

    def recover(self, execution_id: str) -> Outcome:
        return self._request("recover", {"execution": execution_id})

    def recover_abandoned(self) -> list[str]:
        return self._request("recover-abandoned", {})

    def restart(self) -> None:
        self._request("restart", {})

    def effects(self, execution_id: str) -> list[dict[str, JSON]]:
        return self._request("effects", {"execution": execution_id})

    def load(self, execution_id: str, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> Outcome:
        return self._request("load", {"execution": execution_id, "events": events, "snapshot": snapshot})

    def warnings(self) -> list[dict[str, JSON]]:
        return self._request("warnings", {})

    def append_events(self, execution_id: str, events: list[dict[str, JSON]]) -> Outcome:
        return self._request("append-events", {"execution": execution_id, "events": events})

    def erase(self, execution_id: str) -> None:
        self._request("erase", {"execution": execution_id})

    def truncate_prefix(self, execution_id: str, upto: int) -> Outcome:
        return self._request("truncate-prefix", {"execution": execution_id, "upto": upto})

    def arm_kill(self, after_appends: int) -> None:
        self._request("arm-kill", {"afterAppends": after_appends})

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        return self._request("read-log", {"execution": execution_id})

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        return self._request("read-state", {"execution": execution_id})

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        return self._request("fold", {"events": events, "snapshot": snapshot})


def _hello_problem(hello: JSON) -> str | None:
    if not isinstance(hello, dict):
        return f"{_short(hello)} is not an object"
    if hello.get("protocol") != PROTOCOL:
        return f"speaks {hello.get('protocol')!r}, not {PROTOCOL}"
    for key in ("name", "version", "eventSchema"):
        if not isinstance(hello.get(key), str) or not hello.get(key):
            return f"{key} is missing or not a string: {_short(hello)}"
    features = hello.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        return f"features is not a list of names: {_short(features)}"
    return None


def _what(item: bytes | Fault | None) -> str:
    if item is None:
        return "nothing"
    return item.detail if isinstance(item, Fault) else repr(item[:80])


def _short(value: Any) -> str:
    from loomcheck.contract.jsonvalues import show

    return show(value, 120)


def _validator() -> Any:
    from loomcheck.protocol.validation import ProtocolValidator

    return ProtocolValidator()
