"""The state machine's rules for ADR 0056, state migration on resume: resumeAs onto another
flow or a new version, perhaps transforming the recorded input; new code deployed under a
running execution (its contracts evolved, ADR 0077 D4); and a migration recorded by a deploy
that crashed before its resume."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import multiple, rule

from loomcheck.contract import proofs
from loomcheck.contract.logview import flow_id_of
from loomcheck.contract.script import Define, Load, Restart, Resume, ResumeAs
from loomcheck.machine import strategies as s
from loomcheck.machine.answer_rules import AnswerRules
from loomcheck.machine.kernel_rules import KernelRules, supports
from loomcheck.properties.migration import expected_outcome, folded_input
from loomcheck.spec.names import IN_DOUBT_GATE
from loomcheck.spec.versions import pinned_version


class MigrationRules(AnswerRules):
    @rule(execution=KernelRules.executions, flow=KernelRules.flows, payload=s.payloads,
          resolution=st.sampled_from(s.VERDICTS), name=st.sampled_from(("Redeploy",) * 4 + s.GATE_NAMES),
          transform=st.none() | s.transforms)
    @supports("resume-as")
    def resume_as(self, execution: str, flow: str, payload: Any, resolution: str, name: str,
                  transform: dict[str, Any] | None) -> None:
        """Onto another flow or the new version of its own, perhaps migrating its input
        (ADR 0056); run again on the same execution, it migrates an input already migrated."""
        self.apply(ResumeAs(execution, flow, *self.migration_call(execution, flow, payload, transform, name,
                                                                 resolution)))

    def deployed(self, flow: str) -> dict[str, Any] | None:
        """The program last deployed under a flow id, as it was sent."""
        for step in reversed(self.session.trace.steps):
            if isinstance(step.op, Define) and step.op.flow == flow and step.outcome.ok:
                return step.op.program
        return None

    def deploy_a_new_version(self, execution: str, program: dict[str, Any], evolve: bool, plain_first: bool,
                             transform: dict[str, Any] | None, again: dict[str, Any] | None, payload: Any,
                             then: bool) -> None:
        """ADR 0056's scenario: new code is deployed under the flow an execution runs on (K11:
        the execution stays pinned to the old version), half the time the old body with an
        evolved input contract; a plain resume, which the changed code refuses; then the exit,
        a resumeAs onto the new version, perhaps with a transformState; perhaps a second
        migration, whose transform meets the input the first one recorded; perhaps a plain
        resume after them, a re-run that must be handed the recorded input. (A rule of the
        class configured for a run, gate_machine.py: its programs follow the subject's features.)"""
        flow = flow_id_of(self.log_of(execution))
        current = self.deployed(flow) if flow is not None else None
        if current is None:
            return
        if evolve and "input-validation" in self.features:
            program = {**current, "inputSchema": s.EVOLVED_INPUT_SCHEMA, "validateInput": True}
            if "resume-schemas" in self.features:  # the answers' contract evolves too (ADR 0077 D4)
                program["resumeSchemas"] = s.evolved_resume_schemas(current)
        self.apply(Define(flow, program))
        if "resume-as" not in self.features:
            return
        if plain_first and self.parked(execution):
            gate, answer, options = self.migration_call(execution, None, payload, None)
            self.apply(Resume(execution, gate, answer, options))
        step = self.apply(ResumeAs(execution, flow, *self.migration_call(execution, flow, payload, transform)))
        if again is not None and step.outcome.ok:
            step = self.apply(ResumeAs(execution, flow, *self.migration_call(execution, flow, payload, again)))
        if then and step.outcome.ok:
            self.answer_gates_until_done(execution, [payload, payload], "succeeded")

    def migration_call(self, execution: str, flow: str | None, payload: Any, transform: dict[str, Any] | None,
                       name: str = "Redeploy", resolution: str = "succeeded") -> tuple[str, Any, Any]:
        """(gate, answer, options) of an operator's resumeAs onto `flow` (None: the plain resume
        before it): "Redeploy" names the recorded gate when the execution is parked (which the
        operator can read), answered as an approver would (a verdict when in doubt), signed for
        that operation; any other name is sent as it is."""
        parked = self.parked(execution)
        gate = parked["on"] if parked is not None and name == "Redeploy" else name
        answer = self.answer_for(parked, payload, resolution) if parked else payload
        transform = transform if "state-migration" in self.features else None
        operation = proofs.Operation(flow, transform) if flow is not None else proofs.RESUME
        answer, options = self.approval(execution, parked, gate, answer, operation) \
            if parked is not None and gate == parked["on"] else (answer, None)
        if transform is not None:
            options = {**(options or {}), "transformState": transform}
        return gate, answer, options

    @rule(target=KernelRules.executions, execution=KernelRules.executions,
          transform=st.sampled_from(s.WORKING_TRANSFORMS), answer=s.answers, restart=st.booleans())
    @supports("load-log")
    @supports("state-migration")
    def crash_between_migration_and_resume(self, execution: str, transform: dict[str, Any], answer: Any,
                                           restart: bool) -> Any:
        """ADR 0056 D2's hand-crafted history: the migration fact is recorded and the deploy
        crashed before its own resume ran. A copy of a parked execution's log gains
        EXECUTION_MIGRATED with migratedInput; a plain resume, perhaps in a new process,
        must hand the runner the migrated input."""
        parked = self.parked(execution)
        log = self.log_of(execution)
        flow = flow_id_of(log)
        target = self.session.trace.flows.get(flow or "")
        if parked is None or flow is None or target is None or parked.get("on") == IN_DOUBT_GATE:
            return multiple()
        outcome = expected_outcome(transform, folded_input(log), target)
        if outcome.refusal is not None:
            return multiple()
        copy_id = f"x{self.execution_count}"
        self.execution_count += 1
        events = [{"seq": e["seq"], "type": e["type"], "payload": e.get("payload")} for e in log]
        events.append({"seq": len(events) + 1, "type": "EXECUTION_MIGRATED",
                       "payload": self.migration_record(log, flow, outcome.value)})
        if not self.apply(Load(copy_id, events, None)).outcome.ok:
            return multiple()
        if restart and "restart" in self.features:
            self.apply(Restart())
        gate = parked["on"]
        answer, options = self.approval(copy_id, parked, gate, answer)
        self.apply(Resume(copy_id, gate, answer, options))
        return copy_id

    def migration_record(self, log: list[dict[str, Any]], flow: str, migrated: Any) -> dict[str, Any]:
        """EXECUTION_MIGRATED's payload for a redeploy of `flow` onto its current version."""
        record: dict[str, Any] = {"fromFlow": flow, "toFlow": flow}
        pinned, now = pinned_version(log), self.session.trace.registered.get(flow)
        if pinned is not None:
            record["fromVersion"] = pinned
        if now is not None:
            record["toVersion"] = now
        record["migratedInput"] = migrated
        return record
