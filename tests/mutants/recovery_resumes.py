"""Pre-0104 recovery: EXECUTION_RECOVERED then EXECUTION_RESUMED {}, so the
recovery's {} becomes an entry and the flow's next gate passes with it."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.fold import TERMINAL
from loomcheck.reference.runtime import Appender, Runtime


class ResumingRecovery(Runtime):
    def recover(self, execution_id):
        state, _ = self._existing(execution_id)
        if state.status == "suspended" or state.status in TERMINAL:
            return super().recover(execution_id)
        append = Appender(self.store, execution_id, state.sequence + 1)
        append("EXECUTION_RECOVERED", {})
        append("EXECUTION_RESUMED", {})
        return self.drive(execution_id)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=ResumingRecovery)
