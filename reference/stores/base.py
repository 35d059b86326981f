"""The event-store interface.

Every store:
- keeps, per execution, an append-only list of events with seq 1, 2, 3, ...
  (or, after a snapshot import, contiguous from the snapshot's seq + 1);
- guards `append` by the expected next sequence, so that a stale concurrent
  writer is refused (StaleAppendError) instead of interleaving;
- stores payloads as JSON text, so `null` round-trips and what is read back is
  exactly what any other store would read back (ADR 0104, decision D1, "Why null");
- serves range reads by sequence.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Sequence

from loomcheck.reference.events import JSON, Event


class StoreError(Exception):
    """The store cannot do what was asked (bad payload, closed store)."""


class StaleAppendError(StoreError):
    """The append expected a next sequence that is no longer the next one."""

    def __init__(self, execution_id: str, expected: int, actual: int) -> None:
        super().__init__(f"stale append to {execution_id!r}: expected next seq {expected}, store is at {actual}")
        self.execution_id = execution_id
        self.expected = expected
        self.actual = actual


class EventStore(Protocol):
    def append(self, execution_id: str, expected_seq: int, entries: Sequence[tuple[str, JSON]]) -> list[Event]:
        """Append `(type, payload)` entries so the first gets `expected_seq`.
        All or nothing. Raises StaleAppendError if `expected_seq` is not the
        next sequence, StoreError if a payload is not JSON."""
        ...

    def read(self, execution_id: str, after: int = 0, upto: int | None = None) -> list[Event]:
        """Events with `after < seq <= upto` (all after `after` when upto is None), in order."""
        ...

    def next_seq(self, execution_id: str) -> int:
        """The sequence the next appended event gets (1 for an unknown execution)."""
        ...

    def executions(self) -> list[str]:
        """Every execution id with a log or a snapshot, sorted."""
        ...

    def put_snapshot(self, execution_id: str, seq: int, state: dict[str, Any]) -> None:
        """Store a folded state as of `seq` (used to import logs written elsewhere)."""
        ...

    def get_snapshot(self, execution_id: str) -> tuple[int, dict[str, Any]] | None:
        ...

    def truncate_prefix(self, execution_id: str, upto: int, state: dict[str, Any]) -> None:
        """Retention (ADR 0104 D2): store `state`, the folded state as of `upto`, as the
        execution's snapshot and delete its events with seq <= upto, in one step.
        Raises StoreError when `upto` is beyond the log or the state is not JSON."""
        ...

    def erase(self, execution_id: str) -> None:
        """Forget one execution: its events and its snapshot. The store remembers that it
        erased it: the next execution under the id is its next incarnation."""
        ...

    def incarnation(self, execution_id: str) -> int:
        """1 + how many times this store erased `execution_id`: an execution re-created under an
        erased id is not the one an approver saw, so its proofs name it (spec/signing.md
        section 10). Kept by erase, dropped by clear (a new store)."""
        ...

    def clear(self) -> None:
        """Forget every execution, and every erasure: a new store."""
        ...

    def close(self) -> None:
        ...


PAGE = 4096  # events per range read when streaming a log


def stream(store: EventStore, execution_id: str, after: int = 0, page: int = PAGE) -> Iterator[Event]:
    """The events after `after` that the store holds, in order, as `read` would return
    them, but read a page at a time through range reads, so a fold or a scan over a
    long log never holds more than one page of it (bench/memory.py measures that).
    Works on any store: it uses only `read`, `next_seq` and `get_snapshot`."""
    last = store.next_seq(execution_id) - 1
    while after < last:
        chunk = store.read(execution_id, after=after, upto=min(after + page, last))
        if chunk:
            yield from chunk
            after = chunk[-1].seq
            continue
        snapshot = store.get_snapshot(execution_id)
        if snapshot is None or snapshot[0] <= after:
            return  # the log no longer reaches `last` (erased meanwhile)
        after = snapshot[0]  # retention removed this page's events: the log goes on after the snapshot
