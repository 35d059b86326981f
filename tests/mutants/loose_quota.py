"""A quota check that forgot its limit: a QUOTA_EXCEEDED with no reason, or one of
any length, marks _resources.exceeded (meters are still checked)."""

from __future__ import annotations

from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class LooseQuotaContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        original = emitguard.quota_problem
        emitguard.quota_problem = lambda payload, limit: None
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard.quota_problem = original


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=LooseQuotaContext)
