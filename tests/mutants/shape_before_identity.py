"""The payload's shape is checked before the caller's identity: an unauthenticated
caller learns the gate's contract from an invalid-payload refusal (ADR 0077 D3)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class ShapeFirstRuntime(Runtime):
    def authenticate(self, execution_id, state, events, event_type, answer, options, operation=None):
        if state.flow_id in self.flows:
            self.parse_answer(self.flows[state.flow_id], event_type, answer)  # may refuse invalid-payload first
        return super().authenticate(execution_id, state, events, event_type, answer, options, operation)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=ShapeFirstRuntime)
