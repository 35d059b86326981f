"""Replay re-runs the state transform: the migrating run is handed the outcome,
but every later run applies the recorded transform again to the folded input,
which already holds it (ADR 0056 D1: replay folds the recorded value; it never
re-runs the transform). Idempotent transforms hide it; `wrap` does not."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import StateMigrationError
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.transforms import apply_transform

MIGRATING: set[str] = set()


class ReplayingContext(FlowContext):
    def __init__(self, state, events, append, world=None, execution_id: str = "") -> None:
        super().__init__(state, events, append, world, execution_id)
        if execution_id in MIGRATING:
            return
        recorded = [e.payload for e in events if e.type == "EXECUTION_MIGRATED" and isinstance(e.payload, dict)
                    and isinstance(e.payload.get("transform"), dict)]
        if recorded:
            try:
                self.input = apply_transform(recorded[-1]["transform"], self.input, None)
            except StateMigrationError:
                pass


class RecordingTransformRuntime(Runtime):
    def migration_record(self, state, target_flow, transform, migrated):
        record = super().migration_record(state, target_flow, transform, migrated)
        if transform is not None:
            record["transform"] = transform  # kept so that replay can "re-apply" it
        return record

    def resume_as(self, execution_id, target_flow, event_type, payload, options=None):
        MIGRATING.add(execution_id)
        try:
            return super().resume_as(execution_id, target_flow, event_type, payload, options)
        finally:
            MIGRATING.discard(execution_id)


def make() -> ReferenceDriver:
    MIGRATING.clear()
    return ReferenceDriver(store="memory", runtime_class=RecordingTransformRuntime, context_class=ReplayingContext)
