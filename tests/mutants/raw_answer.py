"""The payload is appended as sent and parsed afterwards (for the run only):
the durable log holds neither the defaults nor the declared shape (ADR 0077:
the PARSED value is what is recorded)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Appender, Runtime


class RawAnswerRuntime(Runtime):
    def resume(self, execution_id, event_type, payload, options=None):
        state, _ = self._existing(execution_id)
        self.check_resumable(state, event_type)
        self.parse_answer(self.flows[state.flow_id], event_type, payload)  # checked, then ignored
        append = Appender(self.store, execution_id, state.sequence + 1)
        append(event_type, payload)
        self.record_answer(append, state, payload)
        return self.drive(execution_id)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=RawAnswerRuntime)
