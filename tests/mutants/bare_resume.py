"""An accepted answer is recorded without its resume-typed event, so the log no
longer says which gate name the caller answered."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Appender, Runtime


class BareRuntime(Runtime):
    def record_answer(self, execution_id, state, event_type, answer):
        Appender(self.store, execution_id, state.sequence + 1)("EXECUTION_RESUMED", answer)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=BareRuntime)
