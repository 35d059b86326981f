"""A failing state transform that still appends EXECUTION_MIGRATED (without a
migratedInput) before refusing: the execution is moved onto the new code with
its old input (ADR 0056 D3: nothing is appended, the execution is untouched)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import StateMigrationError
from loomcheck.reference.runtime import Appender, Runtime


class HalfMigratingRuntime(Runtime):
    def migrate_state(self, state, target_flow, transform):
        try:
            return super().migrate_state(state, target_flow, transform)
        except StateMigrationError:
            if transform is not None:
                Appender(self.store, self._current, state.sequence + 1)(
                    "EXECUTION_MIGRATED", self.migration_record(state, target_flow, None, None))
            raise

    def resume_as(self, execution_id, target_flow, event_type, payload, options=None):
        self._current = execution_id
        return super().resume_as(execution_id, target_flow, event_type, payload, options)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=HalfMigratingRuntime)
