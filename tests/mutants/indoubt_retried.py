"""A non-idempotent step treated like an idempotent one: an attempt that
crashed is simply retried, so a charge that already went through is made again."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class RetryingContext(FlowContext):
    def run(self, op):
        if op.kind == "non-idempotent":
            op = op.model_copy(update={"kind": "idempotent"})
        return super().run(op)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=RetryingContext)
