"""The in-memory store: for speed in tests. Payloads are kept as JSON text so it
behaves exactly like the SQLite store (copies, null, refusals of non-JSON)."""

from __future__ import annotations

from typing import Any, Sequence

from loomcheck.reference.events import JSON, Event, loads
from loomcheck.reference.stores.base import StaleAppendError, StoreError
from loomcheck.reference.stores.encoding import check_id, encode_entry, encode_snapshot, storable_id


class InMemoryEventStore:
    def __init__(self) -> None:
        self._logs: dict[str, list[tuple[int, str, str]]] = {}
        self._snapshots: dict[str, tuple[int, str]] = {}
        self._erasures: dict[str, int] = {}  # id -> times erased: the next execution under it is a new incarnation

    def append(self, execution_id: str, expected_seq: int, entries: Sequence[tuple[str, JSON]]) -> list[Event]:
        check_id(execution_id)
        encoded = [encode_entry(event_type, payload) for event_type, payload in entries]
        actual = self.next_seq(execution_id)
        if expected_seq != actual:
            raise StaleAppendError(execution_id, expected_seq, actual)
        if not encoded:
            return []
        log = self._logs.setdefault(execution_id, [])
        written = []
        for offset, (event_type, text) in enumerate(encoded):
            seq = expected_seq + offset
            log.append((seq, event_type, text))
            written.append(Event(execution_id, seq, event_type, loads(text)))
        return written

    def read(self, execution_id: str, after: int = 0, upto: int | None = None) -> list[Event]:
        log = self._logs.get(execution_id, []) if storable_id(execution_id) else []
        if not log:
            return []
        first = log[0][0]
        start = max(0, after - first + 1)
        stop = len(log) if upto is None else max(0, min(len(log), upto - first + 1))
        return [Event(execution_id, seq, t, loads(p)) for seq, t, p in log[start:stop]]

    def next_seq(self, execution_id: str) -> int:
        if not storable_id(execution_id):
            return 1  # an id no store keeps names no execution
        log = self._logs.get(execution_id)
        if log:
            return log[-1][0] + 1
        snapshot = self._snapshots.get(execution_id)
        return snapshot[0] + 1 if snapshot else 1

    def executions(self) -> list[str]:
        return sorted(set(self._logs) | set(self._snapshots))

    def put_snapshot(self, execution_id: str, seq: int, state: dict[str, Any]) -> None:
        self._snapshots[check_id(execution_id)] = (seq, encode_snapshot(state))

    def get_snapshot(self, execution_id: str) -> tuple[int, dict[str, Any]] | None:
        found = self._snapshots.get(execution_id) if storable_id(execution_id) else None
        return (found[0], loads(found[1])) if found else None

    def truncate_prefix(self, execution_id: str, upto: int, state: dict[str, Any]) -> None:
        check_id(execution_id)
        if upto >= self.next_seq(execution_id) or upto < 0:
            raise StoreError(f"cannot truncate {execution_id!r} up to seq {upto}: the log ends before it")
        text = encode_snapshot(state)
        self._snapshots[execution_id] = (upto, text)
        self._logs[execution_id] = [entry for entry in self._logs.get(execution_id, []) if entry[0] > upto]

    def erase(self, execution_id: str) -> None:
        if not storable_id(execution_id):
            return
        self._logs.pop(execution_id, None)
        self._snapshots.pop(execution_id, None)
        self._erasures[execution_id] = self._erasures.get(execution_id, 0) + 1

    def incarnation(self, execution_id: str) -> int:
        return self._erasures.get(execution_id, 0) + 1

    def clear(self) -> None:
        self._logs.clear()
        self._snapshots.clear()
        self._erasures.clear()

    def close(self) -> None:
        pass

