"""Effect-level decisions kept under the ids the effect gave: an effect can
pre-empt the flow's own ctx.decide (reserved ids and conflicts are still refused)."""

from __future__ import annotations

from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver

_decision = emitguard._decision


def _decision_unscoped(payload, decisions, scope, reserved):
    return _decision(payload, decisions, None, reserved)  # checked as if flow code wrote it: no rewrite


class UnscopedContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        emitguard._decision = _decision_unscoped
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard._decision = _decision


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=UnscopedContext)
