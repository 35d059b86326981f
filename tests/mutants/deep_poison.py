"""A log poisoned by depth: no ingress bound, a store that writes any depth, and a fold that
copies payloads by recursion. A start or resume nested deeper than the interpreter's stack is
appended, then the fold's copy overflows: every later read_state, resume and recover of the
execution raises, and its id cannot be used again (the reference before reference/limits.py)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import JSON, Event, loads
from loomcheck.reference.fold import HANDLERS, Handler
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.stores.base import StaleAppendError
from loomcheck.reference.stores.encoding import check_event_type
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.spec.files import deep_json


def recursive_copy(value: JSON) -> JSON:
    if isinstance(value, dict):
        return {key: recursive_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [recursive_copy(item) for item in value]
    return value


def copying(handler: Handler) -> Handler:
    return lambda state, payload: handler(state, recursive_copy(payload))


RECURSIVE_HANDLERS = {event_type: copying(handler) for event_type, handler in HANDLERS.items()}


class UnboundedRuntime(Runtime):
    def ingress(self, value: JSON, what: str, error: Any, not_json: str, too_large: str) -> JSON:
        return deep_json(lambda: json.loads(json.dumps(value)))  # any depth, no bound


class UnboundedStore(InMemoryEventStore):
    def append(self, execution_id: str, expected_seq: int, entries: Sequence[tuple[str, JSON]]) -> list[Event]:
        actual = self.next_seq(execution_id)
        if expected_seq != actual:
            raise StaleAppendError(execution_id, expected_seq, actual)
        log = self._logs.setdefault(execution_id, [])
        written = []
        for offset, (event_type, payload) in enumerate(entries):
            check_event_type(event_type)
            text = deep_json(lambda payload=payload: json.dumps(payload))
            log.append((expected_seq + offset, event_type, text))
            written.append(Event(execution_id, expected_seq + offset, event_type, deep_json(lambda text=text: loads(text))))
        return written


def make() -> ReferenceDriver:
    return ReferenceDriver(store=UnboundedStore(), runtime_class=UnboundedRuntime, handlers=RECURSIVE_HANDLERS)
