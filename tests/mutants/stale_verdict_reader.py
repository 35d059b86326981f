"""The pre-0104 verdict reader: the latest _resumePayload that looks like a
verdict for the step is honoured whatever attempt it answered, so a crashed
retry-fresh attempt re-reads the stale verdict and runs again."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, is_verdict_for
from loomcheck.reference.driver import ReferenceDriver


class StaleReaderContext(FlowContext):
    def verdict(self, step_id, attempt, frame):
        legacy = self.state.variables.get("_resumePayload")
        if is_verdict_for(legacy, step_id):
            return legacy
        return super().verdict(step_id, attempt, frame)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=StaleReaderContext)
