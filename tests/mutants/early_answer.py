"""An answer that arrives before the park is recorded anyway (ADR 0104 D4 says
refuse it): a resume of an execution that is not parked appends
EXECUTION_RESUMED and re-drives it."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.runtime import Runtime


class EagerRuntime(Runtime):
    def check_resumable(self, state, event_type):
        try:
            super().check_resumable(state, event_type)
        except ResumeRefusedError as refused:
            if refused.reason != "not-suspended":
                raise


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=EagerRuntime)
