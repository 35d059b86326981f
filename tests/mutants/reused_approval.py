"""The authenticator checks the operation and the incarnation (spec/signing.md section 10) but
falls back to ADR 0117 D2's fields alone: a proof signed for resume(x, gate, P) is accepted by
resumeAs(x onto another flow, with a transform), which then runs on input the approver never saw,
and one signed for x before it was erased by the execution re-created under x."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.errors import ResumeRefusedError


class ReusingRuntime(Runtime):
    def authenticate(self, execution_id, state, events, event_type, answer, options, operation=None):
        try:
            return super().authenticate(execution_id, state, events, event_type, answer, options, operation)
        except ResumeRefusedError as refused:
            if refused.reason != "unauthenticated":
                raise
            # The bug: "it verified for the park, so it is good for whatever we do with the park".
            context = {"executionId": execution_id, "parkedAtSequence": self.locate_park(execution_id, events),
                       "principal": options.principal}
            verdict = self.security.authenticator.verify(options.event(event_type, answer), context)
            if verdict.status != "granted":
                raise
            return verdict


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=ReusingRuntime)
