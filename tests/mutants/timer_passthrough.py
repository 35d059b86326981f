"""TIMER_FIRED's payload is recorded as sent: a caller's TIMER_FIRED {approved: true}
reaches the flow as an approval past the digest and the authenticator (the hole
ADR 0117 D5 closes)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class PassthroughRuntime(Runtime):
    def shape_answer(self, program, state, event_type, answer):
        if event_type == "TIMER_FIRED":
            return answer if answer is not None else {"wakeAt": (state.suspended_on or {}).get("wakeAt")}
        return super().shape_answer(program, state, event_type, answer)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=PassthroughRuntime)
