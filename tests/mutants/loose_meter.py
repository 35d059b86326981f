"""A meter check that forgot its bounds: negative and over-ceiling increments
(and a quota reason of any length) are folded into _resources."""

from __future__ import annotations

from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class LooseContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        original = emitguard.meter_problem, emitguard.quota_problem
        emitguard.meter_problem = lambda payload, ceilings: None
        emitguard.quota_problem = lambda payload, limit: None
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard.meter_problem, emitguard.quota_problem = original


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=LooseContext)
