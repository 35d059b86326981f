"""The signature is bound to the execution but not to the park: a proof any park
of the execution accepted is good for every later park of the same gate, so one
approval in a loop approves every turn (ADR 0117 D2: exactly one park)."""

from __future__ import annotations

from loomcheck.reference.authenticator import Verdict
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class ParkBlindRuntime(Runtime):
    def authenticate(self, execution_id, state, events, event_type, answer, options, operation=None):
        authenticator = self.security.authenticator
        if authenticator is None or not authenticator.applies_to(event_type):
            return None
        event = options.event(event_type, answer)
        for park in range(1, state.sequence + 64):  # whichever park it was signed for
            verdict = authenticator.verify(event, {"executionId": execution_id, "parkedAtSequence": park,
                                                   "principal": options.principal,
                                                   "operation": operation, "incarnation": self.incarnation(execution_id)})
            if verdict.status == "granted":
                return verdict
        return super().authenticate(execution_id, state, events, event_type, answer, options, operation)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=ParkBlindRuntime)
