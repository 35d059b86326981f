"""The state machine's rules for ADR 0057, gates and their answers: the parked gate answered,
an execution driven through its gates, and resumes naming a wrong gate, a hostile name or a
kernel event type."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import rule

from loomcheck.contract.script import Recover, Resume
from loomcheck.machine import strategies as s
from loomcheck.machine.approval_rules import ApprovalRules
from loomcheck.machine.kernel_rules import KernelRules
from loomcheck.spec.names import IN_DOUBT_GATE


class AnswerRules(ApprovalRules):
    def answer_for(self, parked: dict[str, Any], payload: Any, resolution: str) -> Any:
        """At an in-doubt park an operator answers with a verdict for the parked step
        (or, to test the refusal, with something that is not one)."""
        if parked.get("on") != IN_DOUBT_GATE or resolution == s.NOT_A_VERDICT:
            return payload
        return {"stepId": parked.get("stepId"), "resolution": resolution, "output": payload}

    @rule(execution=KernelRules.executions, payload=s.answers)
    def answer_the_parked_gate(self, execution: str, payload: Any) -> None:
        self.apply(Resume(execution, self.parked_gate(execution) or "go1", payload))

    @rule(execution=KernelRules.executions, answers=st.lists(s.answers, min_size=1, max_size=6),
          resolution=st.sampled_from(s.VERDICTS + (s.NOT_A_VERDICT,)))
    def answer_gates_until_done(self, execution: str, answers: list[Any], resolution: str) -> None:
        """Drive an execution forward: answer whatever it parks on (a verdict when in
        doubt), recover it when its worker died, then once more."""
        for payload in answers:
            parked = self.parked(execution)
            if parked is None and "recover" in self.features and self.last_crashed(execution):
                self.apply(Recover(execution))
                continue
            answer = self.answer_for(parked, payload, resolution) if parked else payload
            gate = parked["on"] if parked else "go1"
            answer, options = self.approval(execution, parked, gate, answer)
            self.remember(self.apply(Resume(execution, gate, answer, options)))
            if parked is None:
                break

    @rule(execution=KernelRules.executions, name=s.resume_names, payload=s.payloads)
    def resume_naming_a_gate(self, execution: str, name: str, payload: Any) -> None:
        self.apply(Resume(execution, name, payload))

    @rule(execution=KernelRules.executions, kind=s.kernel_types, payload=s.payloads)
    def resume_with_a_kernel_type(self, execution: str, kind: str, payload: Any) -> None:
        self.apply(Resume(execution, kind, payload))
