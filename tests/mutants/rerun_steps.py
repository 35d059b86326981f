"""Recorded steps run again on every re-run instead of replaying their output."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class ForgetfulContext(FlowContext):
    def step(self, step_id, effect):
        self._append("STEP_STARTED", {"stepId": step_id, "attempt": 1})
        output = effect()
        self._append("STEP_COMPLETED", {"stepId": step_id, "output": output})
        return output


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=ForgetfulContext)
