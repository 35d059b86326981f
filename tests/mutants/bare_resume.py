"""An accepted answer is recorded without its resume-typed event, so the log no
longer says which gate name the caller answered."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Appender, Runtime


class BareRuntime(Runtime):
    def resume(self, execution_id, event_type, payload, options=None):
        state, _ = self._existing(execution_id)
        self.check_resumable(state, event_type)
        Appender(self.store, execution_id, state.sequence + 1)("EXECUTION_RESUMED", payload)
        return self.drive(execution_id)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=BareRuntime)
