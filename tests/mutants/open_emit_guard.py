"""An emit guard that lets kernel event types through: flow code can forge
kernel state (STEP_COMPLETED, EXECUTION_RESUMED, ...)."""

from __future__ import annotations

from loomcheck.reference import context
from loomcheck.reference.context import FlowContext, fact_key
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import to_plain_json
from loomcheck.spec.vocabulary import vocabulary


class OpenContext(FlowContext):
    def emit(self, event_type, payload, scope=None):
        if event_type in vocabulary().emit_guard.allowed:  # the allow-list is still validated
            return super().emit(event_type, payload, scope)
        plain = to_plain_json(payload)
        if fact_key(event_type, plain) not in self._facts:
            self._append(event_type, plain)
            self._facts.add(fact_key(event_type, plain))


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=OpenContext)


assert context  # the module whose guard this bypasses
