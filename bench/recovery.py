"""Recovery after a kill, for the stores section: a child process runs the reference
Runtime on a SQLite file and is SIGKILLed mid-run; each round recovers a fresh copy of
the killed database, against just reading and folding the same log (docs/bench.md#stores).

The child: python -m loomcheck.bench.recovery PATH STEPS"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from loomcheck.bench.common import Figure, failed, ratio, timed
from loomcheck.reference.fold import fold
from loomcheck.reference.runtime import RECOVERED, Runtime
from loomcheck.reference.stores.sqlite import SqliteEventStore
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.versions import code_version

SECTION = "stores"   # reported with the other store costs
EXECUTION = "x"
FLOW = "f"
POLL_SECONDS = 0.001
KILL_MARGINS = (0.05, 0.25)  # extra steps beyond the kill threshold; the second if the child outran the first


def program(steps: int) -> dict[str, object]:
    return {"body": [{"op": "step", "id": f"s{i}"} for i in range(steps)] + [{"op": "complete"}]}


@dataclass(frozen=True)
class Deployed:
    """The flow as the driver deploys it: parsed, pinned to its code version."""
    program: FlowProgram
    version: str

    @classmethod
    def of(cls, steps: int) -> Deployed:
        raw = program(steps)
        return cls(FlowProgram.model_validate(raw), code_version(raw))

    def runtime(self, store: SqliteEventStore) -> Runtime:
        runtime = Runtime(store)
        runtime.register(FLOW, self.program, self.version)
        return runtime


def child(path: str, steps: int) -> None:
    """The process that gets killed: runs the flow from the start, one append per event."""
    Deployed.of(steps).runtime(SqliteEventStore(path, synchronous="NORMAL")).start(EXECUTION, FLOW, None)


@dataclass(frozen=True)
class Killed:
    directory: Path   # holds the database and its WAL as the kill left them
    events: int       # events in the log at the kill
    steps: int        # steps of the flow
    run_seconds: float


def kill_mid_run(directory: Path, kill_at: int, margin: float) -> Killed | str:
    """Run the child until the log holds `kill_at` events, SIGKILL it, and copy the
    database aside before anything (a checkpoint on close) can tidy it. A reason on failure."""
    steps = int(kill_at / 2 * (1 + margin)) + 1
    path = directory / "killed.db"
    SqliteEventStore(path).close()  # the schema exists before the parent polls
    watcher = SqliteEventStore(path)
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "loomcheck.bench.recovery", str(path), str(steps)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while watcher.next_seq(EXECUTION) - 1 < kill_at:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace")[-300:] if proc.stderr else ""
                return f"child exited ({proc.returncode}) with {watcher.next_seq(EXECUTION) - 1:,} events before " \
                       f"the kill at {kill_at:,} {err}".strip()
            time.sleep(POLL_SECONDS)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        run_seconds = time.perf_counter() - began
        events = watcher.next_seq(EXECUTION) - 1
        aside = directory / "aside"
        aside.mkdir()
        for suffix in ("", "-wal"):  # not -shm: the next opener rebuilds it, as after a real crash
            if (directory / f"killed.db{suffix}").exists():
                shutil.copyfile(directory / f"killed.db{suffix}", aside / f"killed.db{suffix}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watcher.close()
    if events >= steps * 2 + 2:  # STARTED, 2 per step, COMPLETED: the run was over
        return f"the child finished its {steps:,} steps before the kill"
    return Killed(aside, events, steps, run_seconds)


def copy_of(killed: Killed, name: str) -> Path:
    """A fresh copy of the killed database (and WAL) under `name`."""
    for suffix in ("-shm", "-wal", ""):
        (killed.directory.parent / f"{name}{suffix}").unlink(missing_ok=True)
    for suffix in ("", "-wal"):
        source = killed.directory / f"killed.db{suffix}"
        if source.exists():
            shutil.copyfile(source, killed.directory.parent / f"{name}{suffix}")
    return killed.directory.parent / name


@dataclass(frozen=True)
class Recovered:
    seconds: float
    appended: int        # events the recovery appended
    problem: str | None  # why the outcome is wrong, if it is


def recover_once(killed: Killed, flow: Deployed) -> Recovered:
    """Open a fresh copy, build the runtime (the flow already parsed: deploying code is not
    recovery) and recover; timed until recover_abandoned returns, then the outcome checked."""
    path = copy_of(killed, "recover.db")
    outcome: dict[str, object] = {}

    def recover() -> None:
        store = SqliteEventStore(path, synchronous="NORMAL")
        outcome["store"] = store
        outcome["recovered"] = flow.runtime(store).recover_abandoned()

    try:
        seconds = timed(recover)
        store = outcome["store"]
        assert isinstance(store, SqliteEventStore)
        log = store.read(EXECUTION)
        store.close()
    except Exception as exc:  # noqa: BLE001 - a failed measurement is a figure, not a traceback
        return Recovered(0.0, 0, f"recovery raised {type(exc).__name__}: {exc}")
    status = fold(log).status
    marked = any(e.type == RECOVERED for e in log)
    problem = None
    if outcome.get("recovered") != [EXECUTION] or status != "completed" or not marked:
        problem = (f"after recovery: recovered {outcome.get('recovered')!r}, status {status!r}, "
                   f"EXECUTION_RECOVERED {'present' if marked else 'absent'}")
    return Recovered(seconds, len(log) - killed.events, problem)


def recovery_figure(directory: Path, kill_at: int, rounds: int) -> Figure:
    """Kill the child once its log holds `kill_at` events, then the best of `rounds` recoveries."""
    name = f"recovery after a kill, {kill_at // 1000}k-event sqlite log, vs read+fold"
    killed: Killed | str = "not run"
    for attempt, margin in enumerate(KILL_MARGINS):
        attempt_dir = directory / f"kill-{attempt}"
        attempt_dir.mkdir()
        killed = kill_mid_run(attempt_dir, kill_at, margin)
        if isinstance(killed, Killed):
            break
    if isinstance(killed, str):
        return failed(SECTION, name, killed)
    reader = SqliteEventStore(copy_of(killed, "fold.db"))
    try:
        before = fold(reader.read(EXECUTION)).status
        if before != "running":
            return failed(SECTION, name, f"the killed log folds to {before!r}, not 'running': the kill missed the run")
        flow = Deployed.of(killed.steps)
        recovery, baseline, appended = float("inf"), float("inf"), 0
        for _ in range(rounds):  # alternated, best of each, as best_alternating does
            done = recover_once(killed, flow)
            if done.problem is not None:
                return failed(SECTION, name, done.problem)
            recovery, appended = min(recovery, done.seconds), done.appended
            baseline = min(baseline, timed(lambda: fold(reader.read(EXECUTION))))
    finally:
        reader.close()
    return Figure(SECTION, name, ratio(recovery / baseline),
                  detail=f"recovery {recovery:.3f} s (open, runtime, recover_abandoned: re-drives {killed.steps:,} "
                         f"steps, appends {appended:,} events), read+fold {baseline:.3f} s of "
                         f"{killed.events:,} events; child killed after {killed.run_seconds:.1f} s")


def main(argv: list[str]) -> None:
    child(argv[0], int(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
