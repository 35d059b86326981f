"""resumeAs onto a crashed execution records the operator's payload as
EXECUTION_RESUMED, so migrating a crashed execution answers its next gate."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Appender, Runtime


class AnsweringMigration(Runtime):
    def resume_as(self, execution_id, target_flow, event_type, payload, options=None):
        state, _ = self._existing(execution_id)
        if state.status not in ("running", "pending"):
            return super().resume_as(execution_id, target_flow, event_type, payload, options)
        self._require_flow(target_flow)
        append = Appender(self.store, execution_id, state.sequence + 1)
        append("EXECUTION_MIGRATED", {"fromFlow": state.flow_id, "toFlow": target_flow})
        append(event_type, payload)
        append("EXECUTION_RESUMED", payload)
        return self.drive(execution_id)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=AnsweringMigration)
