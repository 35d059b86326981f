"""An allow-list that forgot the audit lists: SAFETY_BLOCKED, EGRESS_DENIED,
EFFECT_DENIED and OUTCOME_RECORDED are refused as kernel types, so first-party
isolation and analytics fail every run that records one."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import EmitRefusedError
from loomcheck.spec.vocabulary import vocabulary


class ClosedAuditContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        if event_type in vocabulary().emit_guard.audit:
            raise EmitRefusedError("kernel-type", f"{event_type} is a kernel event type; flow and effect code may not "
                                                  f"write it")
        return super().emit(event_type, payload, scope)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=ClosedAuditContext)
