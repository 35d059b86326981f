"""The SQLite store: the embedded, file-backed default, with `InMemoryEventStore`'s interface
and behaviour; several store objects (threads or processes) may share one file, each append one
`BEGIN IMMEDIATE` transaction. Durability, FULL by default or NORMAL: docs/stores.md."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, Sequence, get_args

from loomcheck.reference.events import JSON, Event, loads
from loomcheck.reference.stores.base import StaleAppendError, StoreError
from loomcheck.reference.stores.encoding import check_id, encode_entry, encode_snapshot, storable_id

SCHEMA: tuple[str, ...] = (
    # WITHOUT ROWID: the primary key is the table's only b-tree, so range reads
    # by (execution_id, seq) walk it directly. payload is NOT NULL because JSON
    # ADR 0104 D1, "Why null": null is stored as the text "null", never as SQL NULL.
    """CREATE TABLE IF NOT EXISTS events (
        execution_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        payload TEXT NOT NULL,
        PRIMARY KEY (execution_id, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS snapshots (
        execution_id TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        state TEXT NOT NULL
    )""",
    # How many times each id was erased: the next execution under it is its next incarnation,
    # which approvals name (spec/signing.md section 10). A file written before it gains it empty.
    """CREATE TABLE IF NOT EXISTS erasures (
        execution_id TEXT PRIMARY KEY,
        count INTEGER NOT NULL
    )""",
)

# The range reads, public so tests can check their query plans use the primary key.
SELECT_AFTER = "SELECT seq, type, payload FROM events WHERE execution_id = ? AND seq > ? ORDER BY seq"
SELECT_RANGE = "SELECT seq, type, payload FROM events WHERE execution_id = ? AND seq > ? AND seq <= ? ORDER BY seq"
SELECT_LAST_SEQ = "SELECT MAX(seq) FROM events WHERE execution_id = ?"
SELECT_SNAPSHOT = "SELECT seq, state FROM snapshots WHERE execution_id = ?"

BUSY_TIMEOUT_MS = 5000

_NOT_A_FILE = {":memory:", ""}

Synchronous = Literal["FULL", "NORMAL"]
SYNCHRONOUS: tuple[str, ...] = get_args(Synchronous)


class SqliteEventStore:
    """An `EventStore` in one SQLite database file (or ":memory:")."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: Synchronous = "FULL") -> None:
        if synchronous not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}")
        self._path = os.fspath(path)
        self.synchronous = synchronous
        # One connection per store object, shared by its threads under a lock;
        # isolation_level=None so that transactions are exactly the ones we begin.
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self._path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if self._path not in _NOT_A_FILE:
                # WAL lets readers proceed while one writer appends. FULL syncs the WAL
                # at each commit: an acknowledged event is on disk, not only in the OS's
                # cache (NORMAL: lost on a power loss, kept on a process crash).
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._conn.execute(f"PRAGMA synchronous = {synchronous}")
            for statement in SCHEMA:
                self._conn.execute(statement)
        except sqlite3.Error as exc:
            self._conn.close()
            self._conn = None
            raise StoreError(f"cannot open SQLite store {self._path!r}: {exc}") from exc

    @property
    def path(self) -> str:
        """The database path, so another store object can be opened on the same file."""
        return self._path

    def append(self, execution_id: str, expected_seq: int, entries: Sequence[tuple[str, JSON]]) -> list[Event]:
        """Append all `entries` from `expected_seq` on, or nothing.

        Payloads are encoded before the transaction starts, so a bad one is
        refused without touching the file; the next sequence is read under the
        write lock, so the comparison cannot go stale before the insert.
        """
        check_id(execution_id)
        encoded = [encode_entry(event_type, payload) for event_type, payload in entries]
        rows = [(execution_id, expected_seq + offset, t, text) for offset, (t, text) in enumerate(encoded)]
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                actual = self._next_seq(conn, execution_id)
                if expected_seq != actual:
                    raise StaleAppendError(execution_id, expected_seq, actual)
                conn.executemany("INSERT INTO events (execution_id, seq, type, payload) VALUES (?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return [Event(execution_id, seq, t, loads(text)) for _, seq, t, text in rows]

    def read(self, execution_id: str, after: int = 0, upto: int | None = None) -> list[Event]:
        """Events with `after < seq <= upto`, walked in primary-key order."""
        if not storable_id(execution_id):
            return []  # an id no store keeps names no execution
        with self._connection() as conn:
            if upto is None:
                found = conn.execute(SELECT_AFTER, (execution_id, after)).fetchall()
            else:
                found = conn.execute(SELECT_RANGE, (execution_id, after, upto)).fetchall()
        return [Event(execution_id, seq, t, loads(text)) for seq, t, text in found]

    def next_seq(self, execution_id: str) -> int:
        """One past the last event, else one past the snapshot, else 1."""
        if not storable_id(execution_id):
            return 1
        with self._connection() as conn:
            return self._next_seq(conn, execution_id)

    def executions(self) -> list[str]:
        """Ids with events or a snapshot; sorted in Python so the order is code-point order."""
        with self._connection() as conn:
            found = conn.execute(
                "SELECT DISTINCT execution_id FROM events UNION SELECT execution_id FROM snapshots"
            ).fetchall()
        return sorted(execution_id for (execution_id,) in found)

    def put_snapshot(self, execution_id: str, seq: int, state: dict[str, Any]) -> None:
        """Store (or replace) the folded state as of `seq`."""
        check_id(execution_id)
        text = encode_snapshot(state)
        with self._connection() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO snapshots (execution_id, seq, state) VALUES (?, ?, ?)",
                (execution_id, seq, text),
            )

    def get_snapshot(self, execution_id: str) -> tuple[int, dict[str, Any]] | None:
        if not storable_id(execution_id):
            return None
        with self._connection() as conn:
            found = conn.execute(SELECT_SNAPSHOT, (execution_id,)).fetchone()
        return (found[0], loads(found[1])) if found else None

    def truncate_prefix(self, execution_id: str, upto: int, state: dict[str, Any]) -> None:
        """The snapshot and the deletion in one transaction: a reader sees the log whole or truncated."""
        check_id(execution_id)
        text = encode_snapshot(state)
        with self._connection() as conn:
            if upto < 0 or upto >= self._next_seq(conn, execution_id):
                raise StoreError(f"cannot truncate {execution_id!r} up to seq {upto}: the log ends before it")
            self._transaction(conn, [
                ("INSERT OR REPLACE INTO snapshots (execution_id, seq, state) VALUES (?, ?, ?)",
                 (execution_id, upto, text)),
                ("DELETE FROM events WHERE execution_id = ? AND seq <= ?", (execution_id, upto))])

    def erase(self, execution_id: str) -> None:
        """The events, the snapshot and the count of erasures in one transaction: no reader sees
        the id forgotten but not yet counted, which would let the original's approvals through."""
        if not storable_id(execution_id):
            return
        with self._connection() as conn:
            self._transaction(conn, [("DELETE FROM events WHERE execution_id = ?", (execution_id,)),
                                     ("DELETE FROM snapshots WHERE execution_id = ?", (execution_id,)),
                                     ("INSERT INTO erasures (execution_id, count) VALUES (?, 1) "
                                      "ON CONFLICT (execution_id) DO UPDATE SET count = count + 1", (execution_id,))])

    def incarnation(self, execution_id: str) -> int:
        if not storable_id(execution_id):
            return 1  # an id no store can hold was never erased
        with self._connection() as conn:
            found = conn.execute("SELECT count FROM erasures WHERE execution_id = ?", (execution_id,)).fetchone()
        return (found[0] if found else 0) + 1

    @staticmethod
    def _transaction(conn: sqlite3.Connection, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, args in statements:
                conn.execute(sql, args)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def clear(self) -> None:
        """Forget every execution, in one transaction so no reader sees half of it."""
        with self._connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM events")
                conn.execute("DELETE FROM snapshots")
                conn.execute("DELETE FROM erasures")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        """Close the connection; closing twice is harmless, anything else afterwards is a StoreError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SqliteEventStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteEventStore({self._path!r})"

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The open connection, held under the lock; SQLite failures become StoreError
        so callers deal with one exception family whatever the backing."""
        with self._lock:
            if self._conn is None:
                raise StoreError("store is closed")
            try:
                yield self._conn
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store {self._path!r}: {exc}") from exc
            except UnicodeEncodeError as exc:
                # An execution id with a lone surrogate cannot be bound as UTF-8.
                raise StoreError(f"text is not valid Unicode: {exc.reason}") from None

    @staticmethod
    def _next_seq(conn: sqlite3.Connection, execution_id: str) -> int:
        (last,) = conn.execute(SELECT_LAST_SEQ, (execution_id,)).fetchone()
        if last is not None:
            return int(last) + 1
        snapshot = conn.execute(SELECT_SNAPSHOT, (execution_id,)).fetchone()
        return int(snapshot[0]) + 1 if snapshot else 1
