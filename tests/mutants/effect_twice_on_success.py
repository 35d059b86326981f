"""A verdict that the effect succeeded is applied by running the effect again
"to get its output": the non-idempotent tool is called a second time for one attempt."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class DoubleChargeContext(FlowContext):
    def in_doubt(self, op, frame, attempt):
        verdict = self.verdict(op.id, attempt, frame)
        if verdict is not None and verdict.get("resolution") == "succeeded":
            self.world.perform(self.execution_id, op.id, attempt)
        return super().in_doubt(op, frame, attempt)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=DoubleChargeContext)
