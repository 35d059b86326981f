"""A store that "compacts" history: when an execution completes it rewrites
its earlier STEP_STARTED events without their attempt numbers."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import dumps, loads
from loomcheck.reference.stores.memory import InMemoryEventStore


class CompactingStore(InMemoryEventStore):
    def append(self, execution_id, expected_seq, entries):
        written = super().append(execution_id, expected_seq, entries)
        if any(event_type == "EXECUTION_COMPLETED" for event_type, _ in entries):
            log = self._logs[execution_id]
            for index, (seq, event_type, text) in enumerate(log):
                if event_type == "STEP_STARTED":
                    payload = loads(text)
                    payload.pop("attempt", None)
                    log[index] = (seq, event_type, dumps(payload))
        return written


def make() -> ReferenceDriver:
    return ReferenceDriver(store=CompactingStore())
