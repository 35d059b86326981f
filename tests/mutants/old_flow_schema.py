"""resumeAs validates the payload against the OLD code's contract instead of the
target's: the program the execution is pinned to (an earlier version of the same
flow, or the flow it started on) rather than the one it migrates onto (ADR 0077
D4: the new code's declared shape is the one that must hold)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class OldContractRuntime(Runtime):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.history: dict[str, object] = {}  # every version deployed: this kernel keeps old code around

    def register(self, flow_id, program, version=None):
        super().register(flow_id, program, version)
        if version is not None:
            self.history[version] = program

    def resume_as(self, execution_id, target_flow, event_type, payload, options=None):
        state, _ = self._existing(execution_id)
        original = self.parse_answer
        old = self.history.get(state.version or "") or self.flows.get(state.flow_id or "")
        self.parse_answer = lambda program, t, answer: original(old, t, answer) if old else answer
        try:
            return super().resume_as(execution_id, target_flow, event_type, payload, options)
        finally:
            del self.parse_answer


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=OldContractRuntime)
