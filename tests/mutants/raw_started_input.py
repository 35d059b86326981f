"""A runner handed the raw EXECUTION_STARTED input instead of the folded _input:
after a state migration the new code runs on the old-shaped input (ADR 0056 D2:
resume() and resumeAs() prefer the folded _input)."""

from __future__ import annotations

import copy

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class RawInputContext(FlowContext):
    def __init__(self, state, events, *args, **kwargs) -> None:
        super().__init__(state, events, *args, **kwargs)
        started = next((e for e in events if e.type == "EXECUTION_STARTED"), None)
        if started is not None and isinstance(started.payload, dict):
            self.input = copy.deepcopy(started.payload.get("input"))


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=RawInputContext)
