"""A completed human step replays its output without consuming its entry, so on
every re-run the human's answer is served again, to the next gate."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class LeakyReplayContext(FlowContext):
    def human(self, op, point=None):
        frame = self.state.steps.get(op.id)
        if frame is not None and frame.get("status") == "completed":
            return frame.get("output")  # forgets to take its entry
        return super().human(op, point)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=LeakyReplayContext)
