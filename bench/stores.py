"""Store cost (issue 10, item 3): what the in-memory and SQLite event stores
charge for appends and range reads, and how long recovery takes after a kill.

Measured, each comparison side by side in one run (the figures are ratios; the
absolute numbers are in `detail`):

- Append throughput, events/s, for each store: one event per append, as the
  runtime appends (each its own transaction, guarded by the expected seq), and
  batches of 100 and 1000 events per append. Batching's gain (batched / single
  throughput) is informational: the runtime does not batch. SQLite here runs
  with synchronous=NORMAL, so the figures are the store's own cost, not the
  disk's sync latency (the next item measures that).
- Range reads on a 100k-event log (quick: 20k): the whole log in one read, and
  a tail read of the last 10 events (what a warm resume reads) on that log
  versus one 10x shorter that ends with the same events. The tail read walks
  the primary key, so its cost must not grow with the log: target
  tail@long / tail@short <= 2x. The SQLite / memory cost of a full read is
  informational.
- SQLite durability (docs/stores.md): single-event appends of the same events, in
  alternation, on the store as shipped (WAL, synchronous=FULL: the WAL synced at
  every commit, so an acknowledged event survives a power loss), with the explicit
  option synchronous=NORMAL (survives a process crash only), and switched to
  journal_mode=DELETE, synchronous=FULL (the classic rollback journal). Events/s
  of each and the ratios. Informational: it is the machine's disk that answers.
- Recovery after a kill: a child process (`python -m loomcheck.bench.stores
  --child PATH STEPS`) runs the reference Runtime on a SQLite file with a flow
  of idempotent steps (2 events each), and this process SIGKILLs it once the
  log holds >= 100k events (quick: 20k), polling `next_seq` through its own
  store on the same file. The flow has a few percent more steps than that, so
  the kill lands mid-run. The killed database (its file and WAL, as the kill
  left them; not the -shm, which the next opener rebuilds) is copied aside;
  each round recovers a fresh copy: open the store, build a Runtime with the
  flow registered (parsed beforehand: deploying code is not recovery),
  `recover_abandoned()` until it has re-driven the execution to completion.
  The ratio compares that with just reading and folding the same killed log,
  measured in alternation. The
  outcome is checked: the execution folds to "completed" and its log holds
  EXECUTION_RECOVERED. A 55k-step program interprets fast enough (the child
  appends at tens of thousands of events/s), so the log is written by the real
  runtime, one event per append. The child and the recovery run with
  synchronous=NORMAL, which survives a kill: the figure is recovery's own work,
  not one disk sync per event appended.

Run: python -m loomcheck.bench.stores [--quick]
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from loomcheck.bench.common import Figure, best_alternating, failed, guarded, per_second, ratio, show, timed
from loomcheck.bench.logs import Entry, entries
from loomcheck.reference.fold import fold
from loomcheck.reference.runtime import RECOVERED, Runtime
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.reference.stores.sqlite import SqliteEventStore
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.versions import code_version

SECTION = "stores"
EXECUTION = "x"
FLOW = "f"
TAIL = 10            # events a tail read asks for: what a warm resume reads
TAIL_READS = 2000    # tail reads per timing, so one timing is well above the clock's grain
POLL_SECONDS = 0.001
KILL_MARGINS = (0.05, 0.25)  # extra steps beyond the kill threshold; the second if the child outran the first


@dataclass(frozen=True)
class Sizes:
    appends: int        # events per append-throughput round
    settings: int       # events per round of the settings comparison (FULL fsyncs every commit: slow)
    log: int            # the long log for range reads
    short_log: int      # the short log for the tail-read comparison
    kill_at: int        # events in the log when the child is killed
    rounds: int
    recovery_rounds: int


QUICK = Sizes(appends=5_000, settings=100, log=20_000, short_log=2_000, kill_at=20_000, rounds=3, recovery_rounds=1)
FULL = Sizes(appends=20_000, settings=2_000, log=100_000, short_log=10_000, kill_at=100_000, rounds=3,
             recovery_rounds=2)

StoreMaker = Callable[[Path], object]


# -- appends -------------------------------------------------------------------------------

def memory_store(_: Path) -> InMemoryEventStore:
    return InMemoryEventStore()


def sqlite_store(directory: Path) -> SqliteEventStore:
    """The store as shipped: WAL, synchronous=FULL."""
    return SqliteEventStore(fresh_file(directory))


def sqlite_normal(directory: Path) -> SqliteEventStore:
    """The explicit option: WAL, synchronous=NORMAL."""
    return SqliteEventStore(fresh_file(directory), synchronous="NORMAL")


def sqlite_delete_full(directory: Path) -> SqliteEventStore:
    store = SqliteEventStore(fresh_file(directory))
    # Benchmark only: the store's private connection is switched to the classic
    # rollback journal with an fsync per commit, to show what WAL saves at the same
    # durability. Nothing else in loomcheck may touch `_conn`.
    store._conn.execute("PRAGMA journal_mode = DELETE")  # type: ignore[union-attr]
    return store


_file_numbers = itertools.count(1)


def fresh_file(directory: Path) -> Path:
    """A new database file per round, so no round appends to what another left."""
    return directory / f"append-{next(_file_numbers)}.db"


def append_all(store: object, log: Sequence[Entry], size: int) -> None:
    """Append `log` in appends of `size` events, each guarded by the seq it expects."""
    append = store.append  # type: ignore[attr-defined]
    for start in range(0, len(log), size):
        append(EXECUTION, start + 1, log[start:start + size])


def best_appends(makers: list[StoreMaker], sizes: list[int], log: list[Entry], directory: Path,
                 rounds: int) -> list[float]:
    """The best seconds to append `log` for each (maker, batch size), in alternation; each
    round on a fresh store, whose opening is not timed."""
    best = [float("inf")] * len(makers)
    for _ in range(rounds):
        for i, (make, size) in enumerate(zip(makers, sizes)):
            store = make(directory)
            try:
                best[i] = min(best[i], timed(lambda: append_all(store, log, size)))
            finally:
                store.close()  # type: ignore[attr-defined]
    return best


def append_figures(label: str, make: StoreMaker, log: list[Entry], directory: Path, rounds: int) -> list[Figure]:
    single, hundred, thousand = best_appends([make, make, make], [1, 100, 1000], log, directory, rounds)
    count = len(log)
    figures = [Figure(SECTION, f"{label} append, 1 event per append", per_second(count, single),
                      detail=f"{count:,} events in {single:.3f} s")]
    for size, seconds in ((100, hundred), (1000, thousand)):
        figures.append(Figure(SECTION, f"{label} append, batches of {size} vs 1 per append", ratio(single / seconds),
                              detail=f"{per_second(count, seconds)} batched vs "
                                     f"{per_second(count, single)} single"))
    return figures


def settings_figures(log: list[Entry], directory: Path, rounds: int) -> list[Figure]:
    """The same events appended one per append with each setting, in alternation."""
    full, normal, classic = best_appends([sqlite_store, sqlite_normal, sqlite_delete_full], [1, 1, 1], log,
                                         directory, rounds)
    count = len(log)
    each = (f"WAL+FULL {per_second(count, full)}, WAL+NORMAL {per_second(count, normal)}, DELETE+FULL "
            f"{per_second(count, classic)} ({count:,} events, one per append, best of {rounds} rounds)")
    return [Figure(SECTION, "sqlite single append, WAL+NORMAL vs WAL+FULL (the default), throughput",
                   ratio(full / normal), detail=each),
            Figure(SECTION, "sqlite single append, WAL+FULL vs DELETE+FULL, throughput", ratio(classic / full),
                   detail=each)]


# -- range reads ----------------------------------------------------------------------------

def filled(make: StoreMaker, directory: Path, log: list[Entry]) -> object:
    store = make(directory)
    append_all(store, log, 10_000)
    return store


def tail_reader(store: object, count: int) -> Callable[[], None]:
    read = store.read  # type: ignore[attr-defined]
    after = count - TAIL

    def reads() -> None:
        for _ in range(TAIL_READS):
            read(EXECUTION, after)
    return reads


def read_figures(directory: Path, sizes: Sizes) -> list[Figure]:
    """Both stores filled first, so the full reads of the two, and the tail reads of
    the short and long logs, can be timed in alternation."""
    makers = {"memory": memory_store, "sqlite": sqlite_store}
    log = list(entries(sizes.log))
    long_logs = {label: filled(make, directory, log) for label, make in makers.items()}
    # The short log is the long one's last events, so both end alike: the two tail reads then
    # decode the same payloads and differ only in the size of the log they search.
    short_logs = {label: filled(make, directory, log[-sizes.short_log:]) for label, make in makers.items()}
    try:
        full = dict(zip(makers, best_alternating(
            [lambda store=store: store.read(EXECUTION) for store in long_logs.values()],  # type: ignore[attr-defined]
            sizes.rounds)))
        # Tail reads are cheap: more rounds, so a burst of load on the shared machine misses one of them.
        tails = best_alternating([tail_reader(logs[label], count) for label in makers
                                  for logs, count in ((short_logs, sizes.short_log), (long_logs, sizes.log))],
                                 sizes.rounds * 3)
    finally:
        for store in [*long_logs.values(), *short_logs.values()]:
            store.close()  # type: ignore[attr-defined]
    figures: list[Figure] = []
    for index, label in enumerate(makers):
        short_tail, long_tail = tails[2 * index], tails[2 * index + 1]
        grows = long_tail / short_tail
        figures.append(Figure(SECTION, f"{label} full read, {sizes.log:,} events", per_second(sizes.log, full[label]),
                              detail=f"{full[label]:.3f} s for one read of the whole log"))
        figures.append(Figure(SECTION, f"{label} tail read ({TAIL}), {sizes.log // 1000}k vs "
                                       f"{sizes.short_log // 1000}k-event log", ratio(grows), target="<= 2.00x",
                              met=grows <= 2.0,
                              detail=f"{long_tail / TAIL_READS * 1e6:.1f} us vs {short_tail / TAIL_READS * 1e6:.1f} us "
                                     f"per read"))
    figures.append(Figure(SECTION, "full read, sqlite / memory time", ratio(full["sqlite"] / full["memory"]),
                          detail=f"sqlite {full['sqlite']:.3f} s, memory {full['memory']:.3f} s"))
    return figures


# -- recovery after a kill -------------------------------------------------------------------

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
    proc = subprocess.Popen([sys.executable, "-m", "loomcheck.bench.stores", "--child", str(path), str(steps)],
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


def recovery_figure(directory: Path, sizes: Sizes) -> Figure:
    name = f"recovery after a kill, {sizes.kill_at // 1000}k-event sqlite log, vs read+fold"
    killed: Killed | str = "not run"
    for attempt, margin in enumerate(KILL_MARGINS):
        attempt_dir = directory / f"kill-{attempt}"
        attempt_dir.mkdir()
        killed = kill_mid_run(attempt_dir, sizes.kill_at, margin)
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
        for _ in range(sizes.recovery_rounds):  # alternated, best of each, as best_alternating does
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


# -- the section ----------------------------------------------------------------------------

def measure(quick: bool) -> list[Figure]:
    sizes = QUICK if quick else FULL
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="loomcheck-bench-stores-") as tmp:
        directory = Path(tmp)
        log = list(entries(sizes.appends))
        for label, make in (("memory", memory_store), ("sqlite (NORMAL)", sqlite_normal)):
            figures += guarded(SECTION, f"{label} append", lambda: append_figures(label, make, log, directory, sizes.rounds))
        figures += guarded(SECTION, "sqlite durability", lambda: settings_figures(log[:sizes.settings], directory, sizes.rounds))
        figures += guarded(SECTION, "range reads", lambda: read_figures(directory, sizes))
        figures += guarded(SECTION, "recovery after a kill", lambda: [recovery_figure(directory, sizes)])
    return figures


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child(argv[1], int(argv[2]))
        return
    show(measure(quick="--quick" in argv))


if __name__ == "__main__":
    main(sys.argv[1:])
