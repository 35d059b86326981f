"""A human step parks as a pre-0104 kernel parked it: the condition names its
gate but not its step, so the D2 scanner must guess which step a park belongs
to (a caller's stepId is still stripped)."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, Park
from loomcheck.reference.driver import ReferenceDriver


class UnnamedContext(FlowContext):
    def human(self, op, point=None):
        try:
            return super().human(op, point)
        except Park as park:
            if not park.human:
                raise
            raise Park({k: v for k, v in park.condition.items() if k != "stepId"}, human=True) from None


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=UnnamedContext)
