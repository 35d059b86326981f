"""Store cost: what the in-memory and SQLite event stores charge for appends and range
reads, SQLite's durability settings side by side, and (bench/recovery.py) how long
recovery takes after a kill (docs/bench.md#stores).

Run: python -m loomcheck.bench.stores [--quick]"""

from __future__ import annotations

import itertools
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from loomcheck.bench.common import Figure, best_alternating, guarded, per_second, ratio, show, timed
from loomcheck.bench.logs import Entry, entries
from loomcheck.bench.recovery import recovery_figure
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.reference.stores.sqlite import SqliteEventStore

SECTION = "stores"
EXECUTION = "x"
TAIL = 10            # events a tail read asks for: what a warm resume reads
TAIL_READS = 2000    # tail reads per timing, so one timing is well above the clock's grain


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
        figures += guarded(SECTION, "recovery after a kill", lambda: [recovery_figure(directory, sizes.kill_at, sizes.recovery_rounds)])
    return figures


def main(argv: list[str]) -> None:
    show(measure(quick="--quick" in argv))


if __name__ == "__main__":
    main(sys.argv[1:])
