"""Effect-level decisions kept under the flow's own ids and never checked for
conflicts: an effect can pre-empt (or overwrite) the flow's ctx.decide, and a
reserved __loom_ id passes."""

from __future__ import annotations

from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


def _decision_unscoped(payload, decisions, scope, reserved):
    return payload


class UnscopedContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        original = emitguard._decision
        emitguard._decision = _decision_unscoped
        try:
            return super().emit(event_type, payload, scope)
        finally:
            emitguard._decision = original


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=UnscopedContext)
