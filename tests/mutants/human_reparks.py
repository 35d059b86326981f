"""Pre-0104 human steps: the effect throws SuspendError on every run, so the
step re-parks forever and its answers are entries nothing consumes."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, Park
from loomcheck.reference.driver import ReferenceDriver


class ReparkingContext(FlowContext):
    def human(self, op, point=None):
        self._append("STEP_STARTED", {"stepId": op.id, "attempt": 1})
        raise Park({"on": op.on, "stepId": op.id}, human=True)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=ReparkingContext)
