"""One child process of the stdio transport: its pipes, a reader thread per stream, and the
bounds on what it may make the harness hold (protocol/client.py speaks the protocol over it).
Whatever the child does, reading it never hangs nor grows without bound: docs/protocol.md."""

from __future__ import annotations

import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections import deque
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Iterator

MiB = 1024 * 1024
CHUNK = 64 * 1024     # bytes read from a pipe at once: what a pipe's buffer holds
POLL_SECONDS = 0.1    # how often a wait looks up from its queue: a reader told to stop, a leader gone
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


class ChildProcess:
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
