"""The state transform applied to the raw EXECUTION_STARTED input instead of
the folded _input: a second migration undoes the first (ADR 0056 D1: applied to
the folded _input, which a prior migration may already have replaced)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class RawTransformRuntime(Runtime):
    def migrate_state(self, state, target_flow, transform):
        events = self.store.read(self._current)
        started = next((e for e in events if e.type == "EXECUTION_STARTED"), None)
        if started is not None and isinstance(started.payload, dict):
            state.variables["_input"] = started.payload.get("input")
        return super().migrate_state(state, target_flow, transform)

    def resume_as(self, execution_id, target_flow, event_type, payload, options=None):
        self._current = execution_id
        return super().resume_as(execution_id, target_flow, event_type, payload, options)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=RawTransformRuntime)
