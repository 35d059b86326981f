"""The state machine's rules for ADR 0104, recovery never answers a gate: recoveries at the
wrong moment, in-doubt effects and the operator's verdict, human steps, decisions emitted
from inside an effect, and the exit for a crash on old code."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from loomcheck.contract.script import Recover, RecoverAbandoned, Restart, Resume, ResumeAs
from loomcheck.machine import strategies as s
from loomcheck.machine.answer_rules import AnswerRules
from loomcheck.machine.kernel_rules import KernelRules, supports
from loomcheck.spec.names import IN_DOUBT_GATE


class RecoveryRules(AnswerRules):
    @rule(execution=KernelRules.executions)
    @supports("recover")
    def recover(self, execution: str) -> None:
        self.apply(Recover(execution))

    @rule(restart_first=st.booleans())
    @supports("recover")
    def recover_abandoned(self, restart_first: bool) -> None:
        """What a fleet does after a worker dies: restart, then re-drive what was abandoned."""
        if restart_first and "restart" in self.features:
            self.apply(Restart())
        self.apply(RecoverAbandoned())

    @rule(execution=KernelRules.executions, resolution=s.verdict_resolutions, output=s.payloads,
          right_step=st.booleans())
    @supports("in-doubt")
    def give_a_verdict(self, execution: str, resolution: str, output: Any, right_step: bool) -> None:
        parked = self.parked(execution) or {}
        step_id = parked.get("stepId") if right_step else "some-other-step"
        self.apply(Resume(execution, IN_DOUBT_GATE, {"stepId": step_id, "resolution": resolution, "output": output}))

    @precondition(lambda self: "resume-as" in self.features and bool(self.crashed()))
    @rule(payload=s.payloads, pick=st.integers(0, 3), onto=st.integers(0, 3), transform=st.none() | s.transforms)
    def migrate_a_crashed_execution(self, payload: Any, pick: int, onto: int, transform: dict[str, Any] | None) -> None:
        """The documented exit for a crash on old code: resumeAs onto new code (ADR 0104 D1, crashed row),
        perhaps migrating its input (ADR 0056)."""
        crashed = self.crashed()
        flows = sorted(self.session.trace.flows)
        options = {"transformState": transform} if transform is not None and "state-migration" in self.features \
            else None
        self.apply(ResumeAs(crashed[pick % len(crashed)], flows[onto % len(flows)], "Redeploy", payload, options))

    @rule(target=KernelRules.executions, at=st.sampled_from(("after-effect", "before-effect")),
          attempts=st.sampled_from(([1], [1, 2])), output=s.payloads,
          verdict=st.none() | st.sampled_from(s.VERDICTS))
    @supports("in-doubt", "recover")  # its step crashes: a program that needs recovery
    def crash_in_doubt(self, at: str, attempts: list[int], output: Any, verdict: str | None) -> Any:
        """ADR 0104's own case, directly: a non-idempotent effect whose worker dies, so the
        next drive is in doubt and an operator's verdict decides; then a gate. Perhaps
        driven there at once: recovered, then the verdict given."""
        execution = self.purpose_built([
            {"op": "step", "id": "charge", "kind": "non-idempotent", "output": output,
             "crash": {"at": at, "attempts": attempts}},
            {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}])
        if isinstance(execution, str) and verdict is not None:
            self.answer_gates_until_done(execution, [output, output], verdict)
        return execution

    @rule(target=KernelRules.executions, human_gate=st.sampled_from(s.HUMAN_GATES))
    @supports("human-steps")
    def a_human_step_then_a_gate(self, human_gate: str) -> Any:
        """ADR 0104 D1's human step directly: its answer completes it, and every re-run
        replays it by consuming that entry again, so the gate after it never gets it."""
        return self.purpose_built([
            {"op": "step", "id": "review", "kind": "human", "on": human_gate}, {"op": "observe"},
            {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}])

    @rule(target=KernelRules.executions, decision=st.sampled_from(s.DECISION_IDS),
          choices=st.tuples(st.integers(0, 2), st.integers(0, 2)))
    @supports("emit-guard")
    def decide_inside_an_effect(self, decision: str, choices: tuple[int, int]) -> Any:
        """ADR 0104 D1 directly: an effect emits a decision under an id the flow then
        decides itself; the effect's must land in its own namespace, never pre-empt it."""
        return self.purpose_built([
            {"op": "step", "id": "tool", "output": None,
             "emits": [{"type": "DECISION_RECORDED", "payload": {"decisionId": decision, "choice": choices[0]}}]},
            {"op": "decide", "id": decision if not decision.startswith("__loom_") else "d1", "choice": choices[1]},
            {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}])
