"""The old kernel at an in-doubt park: any payload is appended (as an entry)
and the step re-parks, instead of refusing what is not a verdict."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.spec.names import IN_DOUBT_GATE


class LenientRuntime(Runtime):
    def check_answer(self, state, answer):
        pass

    def record_answer(self, append, state, answer):
        if state.parked_on == IN_DOUBT_GATE and not (isinstance(answer, dict) and answer.get("stepId") == (state.suspended_on or {}).get("stepId")):
            append("EXECUTION_RESUMED", answer)
            return
        super().record_answer(append, state, answer)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=LenientRuntime)
