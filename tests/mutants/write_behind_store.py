"""A store that acknowledges an append before it is durable: each append waits in
memory and reaches the database only with the next one (a write-behind cache that
is not flushed before the kernel answers). Reads see it, so nothing looks wrong
until the process dies: a SIGKILL loses the last acknowledged events."""

from __future__ import annotations

import os
import tempfile

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import Event, loads
from loomcheck.reference.stores.base import StaleAppendError
from loomcheck.reference.stores.sqlite import SqliteEventStore, encode_entry


class WriteBehindStore(SqliteEventStore):
    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.pending: tuple[str, int, list] | None = None

    def _flush(self) -> None:
        if self.pending is not None:
            execution_id, expected_seq, entries = self.pending
            self.pending = None
            super().append(execution_id, expected_seq, entries)

    def append(self, execution_id, expected_seq, entries):
        actual = self.next_seq(execution_id)
        if expected_seq != actual:
            raise StaleAppendError(execution_id, expected_seq, actual)
        self._flush()
        self.pending = (execution_id, expected_seq, list(entries))
        return self._pending_events(execution_id)

    def _pending_events(self, execution_id):
        if self.pending is None or self.pending[0] != execution_id:
            return []
        _, first, entries = self.pending
        return [Event(execution_id, first + i, t, loads(encode_entry(t, p)[1])) for i, (t, p) in enumerate(entries)]

    def read(self, execution_id, after=0, upto=None):
        events = super().read(execution_id, after, upto) + self._pending_events(execution_id)
        return [e for e in events if e.seq > after and (upto is None or e.seq <= upto)]

    def next_seq(self, execution_id):
        pending = self._pending_events(execution_id)
        return pending[-1].seq + 1 if pending else super().next_seq(execution_id)

    def executions(self):
        return sorted(set(super().executions()) | ({self.pending[0]} if self.pending else set()))

    def clear(self):
        self.pending = None
        super().clear()


def make() -> ReferenceDriver:
    directory = os.environ.get("LOOMCHECK_STORE_DIR") or tempfile.mkdtemp(prefix="loomcheck-mutant-")
    return ReferenceDriver(store=WriteBehindStore(os.path.join(directory, "events.db")))
