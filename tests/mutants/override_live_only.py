"""Applies the operator override only on the run that completes the human step,
not on replay (ADR 0104 D2: "live and on every replay"), so a later gate is
served the entry the override discarded."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class LiveOnlyContext(FlowContext):
    def discard_legacy(self, step_id):
        frame = self.state.steps.get(step_id) or {}
        if frame.get("status") != "completed":
            super().discard_legacy(step_id)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=LiveOnlyContext)
