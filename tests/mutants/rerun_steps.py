"""Recorded steps run again on every re-run instead of replaying their output."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class ForgetfulContext(FlowContext):
    def run(self, op):
        if op.kind == "human":
            return super().run(op)
        frame = self.state.steps.get(op.id)
        attempt = int(frame.get("attempt") or 0) + 1 if frame else 1
        return self._attempt(op, attempt)  # never looks at a recorded completion


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=ForgetfulContext)
