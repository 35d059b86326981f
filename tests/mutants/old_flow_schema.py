"""resumeAs validates the payload against the OLD flow's contract instead of the
target's (ADR 0077 D4: the new code's declared shape is the one that must hold)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class OldContractRuntime(Runtime):
    def resume_as(self, execution_id, target_flow, event_type, payload, options=None):
        state, _ = self._existing(execution_id)
        original = self.parse_answer
        old = self.flows.get(state.flow_id or "")
        self.parse_answer = lambda program, t, answer: original(old, t, answer) if old else answer
        try:
            return super().resume_as(execution_id, target_flow, event_type, payload, options)
        finally:
            del self.parse_answer


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=OldContractRuntime)
