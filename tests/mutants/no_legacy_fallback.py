"""No legacy fallback: a pre-1.16 snapshot's `_resumePayload` is ignored, so a
single-gate execution answered by an old kernel re-parks on its gate."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class ListOnlyContext(FlowContext):
    def answers(self):
        return self.state.variables.get("_resumePayloads", [])


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=ListOnlyContext)
