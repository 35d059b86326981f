"""ctx.suspend keeps a caller-supplied condition.stepId, so flow code can make
its gate look like a human step's park (ADR 0104 D2 relies on only the kernel
setting it)."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, Park
from loomcheck.reference.driver import ReferenceDriver


class TrustingContext(FlowContext):
    def suspend(self, on, meta=None, point=None, view_digest=None, timeout=None):
        taken = self.take_answer()
        if taken is not None:
            return self._passed(taken, on)
        extra = {"viewDigest": view_digest} if view_digest is not None else {}
        extra.update({"wakeAt": self.now + timeout} if timeout is not None else {})
        raise Park({**(meta or {}), **extra, "on": on})

    def _passed(self, taken, on):
        from loomcheck.reference.context import Passed

        self.passed.append(Passed(taken[0], on, taken[1]))
        return taken[1]


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=TrustingContext)
