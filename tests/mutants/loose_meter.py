"""A meter check that forgot its bounds: negative and over-ceiling increments are
folded into _resources (the quota reason is still checked)."""

from __future__ import annotations

from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class LooseContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        original = emitguard.meter_problem
        emitguard.meter_problem = lambda payload, ceilings: None
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard.meter_problem = original


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=LooseContext)
