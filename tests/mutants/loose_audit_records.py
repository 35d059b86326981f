"""Audit facts waved through as they come: a SAFETY_BLOCKED (or any audit type)
that is not an object is appended to the audit list (meters, quotas and
decisions are still checked)."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, fact_key
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import to_plain_json
from loomcheck.spec.vocabulary import vocabulary


class LooseAuditContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        if event_type not in vocabulary().emit_guard.audit or isinstance(payload, dict):
            return super().emit(event_type, payload, scope)
        plain = to_plain_json(payload)
        if fact_key(event_type, plain) not in self._facts:
            self._append(event_type, plain)
            self._facts.add(fact_key(event_type, plain))


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=LooseAuditContext)
