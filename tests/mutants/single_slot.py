"""Pre-ADR 0057 passthrough: the context keeps only the latest answer
(`_resumePayload`) and a single-shot consumed flag. Gate 1 passes with gate 2's
payload, and gate 2 re-parks forever."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, Park, Passed
from loomcheck.reference.driver import ReferenceDriver


class SingleSlotContext(FlowContext):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._spent = False

    def suspend(self, on: str, meta=None, point=None, view_digest=None, timeout=None):
        variables = self.state.variables
        if not self._spent and "_resumePayload" in variables:
            self._spent = True
            self.passed.append(Passed(0 if point is None else point, on, variables["_resumePayload"]))
            return variables["_resumePayload"]
        condition = {"on": on}
        if view_digest is not None:
            condition["viewDigest"] = view_digest
        if timeout is not None:
            condition["wakeAt"] = self.now + timeout
        raise Park(condition)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=SingleSlotContext)
