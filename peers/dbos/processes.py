"""The adapter's side of the DBOS worker processes: the zygote that forks workers, and a forked
worker spoken to in JSON lines over two FIFOs. Part of the DBOS glue (NOTES.md), rendered into
every DBOS reproducer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

JSON = Any


class WorkerDied(Exception):
    """The worker process exited (a crash fault fired in it)."""


class Zygote:
    """The process that forks workers (worker.zygote_main)."""

    def __init__(self, store: Path, command: list[str]) -> None:
        """`command` + [STORE] runs `worker.zygote_main(STORE)` in a new process."""
        self.store = store
        self.log = open(store / "worker.log", "ab")
        self.process = subprocess.Popen([*command, str(store)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        preexec_fn=die_with_parent, text=True, bufsize=1)
        self.count = 0

    def fork(self) -> "Worker":
        assert self.process.stdin is not None and self.process.stdout is not None
        self.count += 1
        base = self.store / f"worker-{os.getpid()}-{self.count}"
        fifo_in, fifo_out = f"{base}.in", f"{base}.out"
        for fifo in (fifo_in, fifo_out):
            if os.path.exists(fifo):
                os.unlink(fifo)
            os.mkfifo(fifo)
        try:
            self.process.stdin.write(json.dumps({"fifo_in": fifo_in, "fifo_out": fifo_out}) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the DBOS zygote died (exit status {self.process.wait()}); see {self.log.name}")
            pid = json.loads(line)["pid"]
            # The same order as the worker opens them, so neither blocks for ever.
            to_worker = open(fifo_in, "w", buffering=1)
            from_worker = open(fifo_out, "r")
        finally:
            for fifo in (fifo_in, fifo_out):
                if os.path.exists(fifo):
                    os.unlink(fifo)
        return Worker(pid, to_worker, from_worker)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.log.close()


class Worker:
    """One forked worker process: launched once, then serves requests until it dies."""

    def __init__(self, pid: int, to_worker: Any, from_worker: Any) -> None:
        self.pid, self.to_worker, self.from_worker = pid, to_worker, from_worker
        self.dead = False
        self.ready: list[str] = []

    def launch(self, fresh: bool, kernel_types: frozenset[str]) -> list[str]:
        """DBOS.launch() in the worker; its recovery is part of it. The ids it re-drove."""
        self.ready = self.call("launch", fresh=fresh, kernelTypes=sorted(kernel_types))
        return self.ready

    def call(self, op: str, **fields: JSON) -> JSON:
        try:
            self.to_worker.write(json.dumps({"op": op, **fields}) + "\n")
            self.to_worker.flush()
        except (BrokenPipeError, OSError) as exc:
            self.dead = True
            raise WorkerDied(str(exc)) from None
        line = self.from_worker.readline()
        if not line:
            self.dead = True
            raise WorkerDied("the worker process exited")
        reply = json.loads(line)
        if not reply["ok"]:
            raise RuntimeError(f"the DBOS worker failed:\n{reply['trace']}")
        return reply["result"]

    def alive(self) -> bool:
        if self.dead:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            self.dead = True
        return not self.dead

    def stop(self) -> None:
        if not self.dead:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.dead = True
        for stream in (self.to_worker, self.from_worker):
            try:
                stream.close()
            except OSError:
                pass


def die_with_parent() -> None:
    """The worker must not outlive the adapter (the harness SIGKILLs the adapter: `durable`)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
