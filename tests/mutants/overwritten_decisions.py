"""No conflict check: an emitted DECISION_RECORDED for an id already recorded with
another choice is appended, and the latest choice wins (reserved ids are still
refused and effect ids still rewritten)."""

from __future__ import annotations

from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver

_decision = emitguard._decision


def _decision_forgetful(payload, decisions, scope, reserved):
    return _decision(payload, {}, scope, reserved)  # checked against no earlier decision


class OverwritingContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        emitguard._decision = _decision_forgetful
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard._decision = _decision


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=OverwritingContext)
