"""Both reference stores against the conformance kit, plus SQLite-only checks."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from pathlib import Path

import pytest

from loomcheck.reference.stores.base import EventStore, StaleAppendError, StoreError
from loomcheck.kits.stores import StoreConformance
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.reference.stores.sqlite import SELECT_AFTER, SELECT_LAST_SEQ, SELECT_RANGE, SqliteEventStore


class TestInMemoryStore(StoreConformance):
    def make_store(self) -> EventStore:
        return InMemoryEventStore()


class TestSqliteStore(StoreConformance):
    """File-backed SQLite; each store gets its own file under the test's tmp_path."""

    @pytest.fixture(autouse=True)
    def _database_dir(self, tmp_path: Path) -> None:
        self._dir = tmp_path
        self._names = itertools.count()

    def make_store(self) -> EventStore:
        return SqliteEventStore(self._dir / f"store-{next(self._names)}.sqlite")

    def reopen_store(self, store: EventStore) -> EventStore | None:
        assert isinstance(store, SqliteEventStore)
        return SqliteEventStore(store.path)


class TestSqliteInMemoryDatabase(StoreConformance):
    """The ":memory:" database: same behaviour, not durable (the durable cases skip)."""

    def make_store(self) -> EventStore:
        return SqliteEventStore(":memory:")


# ------------------------------------------------------------ SQLite only


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "events.sqlite"


def test_schema_payload_not_null_and_without_rowid(db_path: Path) -> None:
    """JSON null is the text "null": the payload column must refuse SQL NULL."""
    SqliteEventStore(db_path).close()
    conn = sqlite3.connect(db_path)
    try:
        columns = {row[1]: row for row in conn.execute("PRAGMA table_info(events)")}
        # (cid, name, type, notnull, default, pk)
        assert {name: (row[2], row[3], row[5]) for name, row in columns.items()} == {
            "execution_id": ("TEXT", 1, 1),
            "seq": ("INTEGER", 1, 2),
            "type": ("TEXT", 1, 0),
            "payload": ("TEXT", 1, 0),
        }
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'").fetchone()
        assert "WITHOUT ROWID" in sql.upper()
        snapshot_columns = {row[1]: (row[2], row[3], row[5]) for row in conn.execute("PRAGMA table_info(snapshots)")}
        assert snapshot_columns == {"execution_id": ("TEXT", 0, 1), "seq": ("INTEGER", 1, 0), "state": ("TEXT", 1, 0)}
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute("INSERT INTO events VALUES ('x', 1, 't', NULL)")
    finally:
        conn.close()


def test_null_payload_is_stored_as_text(db_path: Path) -> None:
    store = SqliteEventStore(db_path)
    store.append("x", 1, [("t", None), ("u", {"a": None})])
    store.close()
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute("SELECT payload, typeof(payload) FROM events ORDER BY seq").fetchall()
    finally:
        conn.close()
    assert rows == [("null", "text"), ('{"a":null}', "text")]


@pytest.mark.parametrize(
    ("sql", "params"),
    [(SELECT_AFTER, ("x", 3)), (SELECT_RANGE, ("x", 3, 7)), (SELECT_LAST_SEQ, ("x",))],
    ids=["after", "range", "last-seq"],
)
def test_reads_use_primary_key(db_path: Path, sql: str, params: tuple[object, ...]) -> None:
    """Range reads walk the (execution_id, seq) primary key instead of scanning the table."""
    store = SqliteEventStore(db_path)
    store.append("x", 1, [("t", i) for i in range(10)])
    store.close()
    conn = sqlite3.connect(db_path)
    try:
        plan = " | ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    finally:
        conn.close()
    assert "USING PRIMARY KEY" in plan, plan
    assert "SCAN" not in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # ORDER BY seq comes for free from the key


def test_file_database_uses_wal_and_busy_timeout(db_path: Path) -> None:
    store = SqliteEventStore(db_path)
    try:
        conn = store._conn
        assert conn is not None
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        # FULL: every commit synced, so an acknowledged event survives a power loss (docs/stores.md)
        assert conn.execute("PRAGMA synchronous").fetchone() == (2,)
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
        assert conn.isolation_level is None
    finally:
        store.close()


def test_normal_synchronous_is_an_explicit_option(db_path: Path) -> None:
    store = SqliteEventStore(db_path, synchronous="NORMAL")
    try:
        assert store._conn is not None and store._conn.execute("PRAGMA synchronous").fetchone() == (1,)
    finally:
        store.close()
    with pytest.raises(ValueError, match="FULL, NORMAL"):
        SqliteEventStore(db_path, synchronous="OFF")  # type: ignore[arg-type]


def test_operations_after_close_raise(db_path: Path) -> None:
    store = SqliteEventStore(db_path)
    store.append("x", 1, [("t", None)])
    store.close()
    store.close()  # harmless
    calls = [
        lambda: store.append("x", 2, [("t", None)]),
        lambda: store.read("x"),
        lambda: store.next_seq("x"),
        lambda: store.executions(),
        lambda: store.put_snapshot("x", 1, {}),
        lambda: store.get_snapshot("x"),
        lambda: store.clear(),
    ]
    for call in calls:
        with pytest.raises(StoreError, match="store is closed"):
            call()


def test_refused_payload_never_opens_a_transaction(db_path: Path) -> None:
    """Encoding happens before BEGIN IMMEDIATE, so a bad payload does not even take the write lock."""
    store = SqliteEventStore(db_path)
    blocker = sqlite3.connect(db_path, isolation_level=None, timeout=0.1)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # hold the write lock
        with pytest.raises(StoreError, match="not JSON"):
            store.append("x", 1, [("t", float("nan"))])
        blocker.execute("ROLLBACK")
        assert store.append("x", 1, [("t", 1)])[0].seq == 1
    finally:
        blocker.close()
        store.close()


def test_lone_surrogate_execution_id_is_a_store_error(db_path: Path) -> None:
    store = SqliteEventStore(db_path)
    try:
        with pytest.raises(StoreError):
            store.append("x\ud800", 1, [("t", None)])
        assert store.executions() == []
        assert store.append("x", 1, [("t", None)])[0].seq == 1
    finally:
        store.close()


def test_concurrent_writers_never_lose_or_duplicate(db_path: Path) -> None:
    """Two threads, each with its own store on one file, append with read-then-append retries:
    the final log is 1..n with every writer's events exactly once."""
    SqliteEventStore(db_path).close()  # create the schema before the race
    per_writer = 40
    errors: list[BaseException] = []
    stale_counts: dict[str, int] = {}
    start = threading.Barrier(2)

    def writer(name: str) -> None:
        store = SqliteEventStore(db_path)
        stale = 0
        try:
            start.wait()
            for i in range(per_writer):
                while True:
                    seq = store.next_seq("shared")
                    try:
                        store.append("shared", seq, [(name, {"writer": name, "i": i}), (name, {"writer": name, "i": i, "part": 2})])
                        break
                    except StaleAppendError:
                        stale += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            stale_counts[name] = stale
            store.close()

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("w1", "w2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []

    store = SqliteEventStore(db_path)
    try:
        events = store.read("shared")
    finally:
        store.close()
    assert [event.seq for event in events] == list(range(1, 4 * per_writer + 1))
    for name in ("w1", "w2"):
        mine = [event.payload for event in events if event.type == name]
        assert mine == [p for i in range(per_writer) for p in ({"writer": name, "i": i}, {"writer": name, "i": i, "part": 2})]
    # each append's two events are adjacent: appends never interleave
    for first, second in zip(events[::2], events[1::2]):
        assert second.payload == {**first.payload, "part": 2}
