"""The Hypothesis state machine: defines generated multi-gate flows, starts
executions, and resumes them with the right gate, a wrong gate, a kernel event
type, a hostile name, and while not parked; recovers them at the wrong moment.
After every operation it evaluates the selected invariants' predicates on the
newest step. Everything goes through the driver interface.

A violation raises an exception whose class is specific to its invariant, so
Hypothesis shrinks each invariant's failure on its own (distinct failures are
reported together) and the shrunk script is what the report keeps."""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, NoReturn

import hypothesis
import hypothesis.errors
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import ExampleDatabase
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from loomcheck.contract.script import (
    AdvanceClock,
    Configure,
    Define,
    Load,
    Operation,
    Recover,
    RecoverAbandoned,
    Restart,
    Resume,
    ResumeAs,
    Start,
)
from loomcheck.fuzz.campaign import scoped
from loomcheck.contract.logview import flow_id_of, park_seq as newest_park
from loomcheck.properties.migration import expected_outcome, folded_input
from loomcheck.spec.versions import pinned_version
from loomcheck.contract import proofs
from loomcheck.contract.signing import covers
from loomcheck.spec.names import TIMER_FIRED
from loomcheck.spec.names import IN_DOUBT_GATE
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.machine import strategies as s
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step


class InvariantViolated(AssertionError):
    def __init__(self, violations: list[Violation], operations: list[Operation]) -> None:
        super().__init__(violations[0].message)
        self.violations = violations
        self.operations = operations


class ImplementationFailedInRun(Exception):
    def __init__(self, failure: ImplementationFailed, operations: list[Operation]) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.operations = operations


class TransportFaultInRun(BaseException):
    """The implementation's process hung, died or broke the protocol. A BaseException so
    that Hypothesis stops at once instead of shrinking: every replay would cost a
    restart (and a hang its whole timeout), and the budget of restarts is the run's."""

    def __init__(self, failure: ImplementationFailed, operations: list[Operation]) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.operations = operations


def in_run(failure: ImplementationFailed, operations: list[Operation]) -> ImplementationFailedInRun | TransportFaultInRun:
    return (TransportFaultInRun if failure.reason else ImplementationFailedInRun)(failure, operations)


_VIOLATION_TYPES: dict[str, type[InvariantViolated]] = {}


def violation_type(invariant_id: str) -> type[InvariantViolated]:
    """One exception class per invariant: Hypothesis tells failures apart by type."""
    if invariant_id not in _VIOLATION_TYPES:
        name = "Violated_" + "".join(c if c.isalnum() else "_" for c in invariant_id)
        _VIOLATION_TYPES[invariant_id] = type(name, (InvariantViolated,), {})
    return _VIOLATION_TYPES[invariant_id]


@dataclass(frozen=True)
class Budget:
    max_examples: int
    steps: int
    derandomize: bool
    explore_depth: int = 8          # the explorer's bound: every history of this many operations (explore/)
    explore_seconds: float = 120.0  # its time budget; what it does not finish is reported unknown, not passed


DERANDOMIZED_SEED = 20260117  # the ci profile's examples: fixed here, not by the source text of the machine
PROFILES: dict[str, Budget] = {
    "ci": Budget(max_examples=300, steps=25, derandomize=True, explore_depth=8, explore_seconds=120.0),
    "dev": Budget(max_examples=300, steps=30, derandomize=False, explore_depth=8, explore_seconds=120.0),
    "campaign": Budget(max_examples=5_000, steps=50, derandomize=False, explore_depth=14, explore_seconds=600.0),
    # For a peer whose every operation is several round trips to a server (Prefect, about 0.6 s
    # a start or resume; docs/peers.md): derandomised like ci, 10 examples of 8 steps, so a whole
    # catalogue takes a quarter of an hour rather than hours. Not a CI profile.
    "peers-slow": Budget(max_examples=10, steps=8, derandomize=True, explore_depth=4, explore_seconds=600.0),
}


@dataclass
class Counters:
    examples: int = 0
    steps: int = 0
    on_example: Callable[[int], None] | None = None
    first_failure: dict[str, int] = field(default_factory=dict)  # invariant -> example number it first failed in
    crashes: list[ImplementationFailedInRun] = field(default_factory=list)  # driver exceptions, one per example


def build_machine(session: Session, invariant_ids: Iterable[str], counters: Counters) -> type[RuleBasedStateMachine]:
    ids = tuple(invariant_ids)
    features = session.features
    program_strategy = s.programs(features=features)

    def supports(*needed: str):
        return precondition(lambda self: set(needed) <= features)

    def crashed(failed: ImplementationFailed, operations: list[Operation]) -> NoReturn:
        """A driver exception ends its example only: it is kept as one finding (its operation and
        script), and the invariants go on being judged by the other examples. A fault of the
        process (a hang, a death, garbage) stops the run instead: every further example costs a restart."""
        if failed.reason:
            raise TransportFaultInRun(failed, operations) from None
        counters.crashes.append(ImplementationFailedInRun(failed, operations))
        hypothesis.reject()
        raise AssertionError("unreachable")  # pragma: no cover - reject() raises

    class GateMachine(RuleBasedStateMachine):
        flows = Bundle("flows")
        executions = Bundle("executions")

        def __init__(self) -> None:
            super().__init__()
            counters.examples += 1
            if counters.on_example is not None:
                counters.on_example(counters.examples)
            self.flow_count = 0
            self.execution_count = 0
            self.granted: list[Resume] = []  # signed approvals the kernel accepted, to replay
            self.timed: set[str] = set()  # executions parked with a wakeAt: only then does time matter
            try:
                session.reset()
            except ImplementationFailed as failed:
                raise in_run(failed, []) from None

        def apply(self, op: Operation):
            counters.steps += 1
            try:
                step = session.apply(op)
                violations = check_step(step, session.trace, ids)
            except ImplementationFailed as failed:
                crashed(failed, session.script())
            if violations:
                counters.first_failure.setdefault(violations[0].invariant, counters.examples)
                raise violation_type(violations[0].invariant)(violations, session.trace.operations)
            self.note_timers(step)
            return step

        def note_timers(self, step: Any) -> None:
            """Which executions are parked with a wakeAt, from what the step already read."""
            if step.execution is not None:
                parked = (step.state_after or {}).get("suspendedOn") or {}
                timed = (step.state_after or {}).get("status") == "suspended" and "wakeAt" in parked
                (self.timed.add if timed else self.timed.discard)(step.execution)
            elif step.others:
                self.timed = {x for x in step.others if "wakeAt" in (self.parked(x) or {})}

        @initialize(config=st.sampled_from(s.SECURITY_CHOICES))
        def configure_security(self, config: str | None) -> None:
            """How the deployment is composed (ADR 0117 D2, D3): before anything runs."""
            if "security" in features and config is not None:
                self.apply(Configure(s.SECURITY_CONFIGS[config]))

        @initialize(target=executions, program=s.programs(min_gates=2, features=features, rich=True), input=s.inputs)
        def a_multi_gate_execution(self, program: dict[str, Any], input: Any):
            """Every example has at least one execution with two or more gates to drive."""
            flow = self.define(program)
            return self.start(flow, input) if isinstance(flow, str) else multiple()

        @rule(target=flows, program=program_strategy)
        def define(self, program: dict[str, Any]):
            flow_id = f"f{self.flow_count}"
            self.flow_count += 1
            step = self.apply(Define(flow_id, program))
            return flow_id if step.outcome.ok else multiple()

        @rule(target=executions, flow=flows, input=s.inputs)
        def start(self, flow: str, input: Any):
            execution = f"x{self.execution_count}"
            self.execution_count += 1
            step = self.apply(Start(execution, flow, input))
            return execution if step.outcome.ok else multiple()

        def parked(self, execution: str) -> dict[str, Any] | None:
            try:
                state = session.read_state(execution)
            except ImplementationFailed as failed:
                crashed(failed, session.script())
            parked = state.get("suspendedOn") if state.get("status") == "suspended" else None
            return parked if isinstance(parked, dict) and isinstance(parked.get("on"), str) else None

        def parked_gate(self, execution: str) -> str | None:
            parked = self.parked(execution)
            return parked["on"] if parked else None

        def log_of(self, execution: str) -> list[dict[str, Any]]:
            try:
                return session.read_log(execution)
            except ImplementationFailed as failed:
                crashed(failed, session.script())

        def park_seq(self, execution: str) -> int:
            return newest_park(self.log_of(execution)) or 1

        def approval(self, execution: str, parked: dict[str, Any] | None, gate: str, payload: Any,
                     operation: proofs.Operation = proofs.RESUME) -> tuple[Any, dict[str, Any] | None]:
            """What a well-behaved approver sends: the parked digest echoed and, where an
            authenticator covers the gate, ann's signature for this park (ADR 0117 D1, D2) and
            the operation it is sent with (spec/signing.md section 10)."""
            digest = (parked or {}).get("viewDigest")
            if digest is not None and gate != TIMER_FIRED:
                payload = {**payload, "viewDigest": digest} if isinstance(payload, dict) else \
                    {"value": payload, "viewDigest": digest}
            if not covers(session.trace.security, gate):
                return payload, None
            actor, secret = s.SIGNERS["ann"]
            claim = proofs.Claim(execution, self.park_seq(execution), actor, session.trace.now + 60_000, gate, payload,
                                 operation=operation, incarnation=proofs.incarnation(session.trace, execution))
            proof = proofs.sign(session, claim, secret)
            return payload, ({"proof": proof} if proof is not None else None)

        def answer_for(self, parked: dict[str, Any], payload: Any, resolution: str) -> Any:
            """At an in-doubt park an operator answers with a verdict for the parked step
            (or, to test the refusal, with something that is not one)."""
            if parked.get("on") != IN_DOUBT_GATE or resolution == s.NOT_A_VERDICT:
                return payload
            return {"stepId": parked.get("stepId"), "resolution": resolution, "output": payload}

        @rule(execution=executions, payload=s.answers)
        def answer_the_parked_gate(self, execution: str, payload: Any) -> None:
            self.apply(Resume(execution, self.parked_gate(execution) or "go1", payload))

        @rule(execution=executions, answers=st.lists(s.answers, min_size=1, max_size=6),
              resolution=st.sampled_from(s.VERDICTS + (s.NOT_A_VERDICT,)))
        def answer_gates_until_done(self, execution: str, answers: list[Any], resolution: str) -> None:
            """Drive an execution forward: answer whatever it parks on (a verdict when in
            doubt), recover it when its worker died, then once more."""
            for payload in answers:
                parked = self.parked(execution)
                if parked is None and "recover" in features and self.last_crashed(execution):
                    self.apply(Recover(execution))
                    continue
                answer = self.answer_for(parked, payload, resolution) if parked else payload
                gate = parked["on"] if parked else "go1"
                answer, options = self.approval(execution, parked, gate, answer)
                self.remember(self.apply(Resume(execution, gate, answer, options)))
                if parked is None:
                    break

        def last_crashed(self, execution: str) -> bool:
            mine = [st for st in session.trace.steps if st.execution == execution]
            return bool(mine) and mine[-1].outcome.crashed

        def crashed(self) -> list[str]:
            """Executions whose worker died and that nothing has re-driven since."""
            return [x for x in session.executions() if self.last_crashed(x)]

        @precondition(lambda self: "resume-as" in features and bool(self.crashed()))
        @rule(payload=s.payloads, pick=st.integers(0, 3), onto=st.integers(0, 3), transform=st.none() | s.transforms)
        def migrate_a_crashed_execution(self, payload: Any, pick: int, onto: int, transform: dict[str, Any] | None) -> None:
            """The documented exit for a crash on old code: resumeAs onto new code (ADR 0104 D1, crashed row),
            perhaps migrating its input (ADR 0056)."""
            crashed = self.crashed()
            flows = sorted(session.trace.flows)
            options = {"transformState": transform} if transform is not None and "state-migration" in features else None
            self.apply(ResumeAs(crashed[pick % len(crashed)], flows[onto % len(flows)], "Redeploy", payload, options))

        @rule(execution=executions, resolution=s.verdict_resolutions, output=s.payloads, right_step=st.booleans())
        @supports("in-doubt")
        def give_a_verdict(self, execution: str, resolution: str, output: Any, right_step: bool) -> None:
            parked = self.parked(execution) or {}
            step_id = parked.get("stepId") if right_step else "some-other-step"
            self.apply(Resume(execution, IN_DOUBT_GATE, {"stepId": step_id, "resolution": resolution, "output": output}))

        @rule(restart_first=st.booleans())
        @supports("recover")
        def recover_abandoned(self, restart_first: bool) -> None:
            """What a fleet does after a worker dies: restart, then re-drive what was abandoned."""
            if restart_first and "restart" in features:
                self.apply(Restart())
            self.apply(RecoverAbandoned())

        @rule(execution=executions, flow=flows, payload=s.payloads, resolution=st.sampled_from(s.VERDICTS),
              name=st.sampled_from(("Redeploy",) * 4 + s.GATE_NAMES), transform=st.none() | s.transforms)
        @supports("resume-as")
        def resume_as(self, execution: str, flow: str, payload: Any, resolution: str, name: str,
                      transform: dict[str, Any] | None) -> None:
            """Onto another flow or the new version of its own, perhaps migrating its input
            (ADR 0056); run again on the same execution, it migrates an input already migrated."""
            self.apply(ResumeAs(execution, flow, *self.migration_call(execution, flow, payload, transform, name,
                                                                     resolution)))

        def deployed(self, flow: str) -> dict[str, Any] | None:
            """The program last deployed under a flow id, as it was sent."""
            for step in reversed(session.trace.steps):
                if isinstance(step.op, Define) and step.op.flow == flow and step.outcome.ok:
                    return step.op.program
            return None

        @rule(execution=executions, program=program_strategy, evolve=st.booleans(), plain_first=st.booleans(),
              transform=st.none() | s.transforms, again=st.none() | s.transforms | s.transforms, payload=s.answers,
              then=st.booleans())
        @supports("code-versions")
        def deploy_a_new_version(self, execution: str, program: dict[str, Any], evolve: bool, plain_first: bool,
                                 transform: dict[str, Any] | None, again: dict[str, Any] | None, payload: Any,
                                 then: bool) -> None:
            """ADR 0056's scenario: new code is deployed under the flow an execution runs on (K11:
            the execution stays pinned to the old version), half the time the old body with an
            evolved input contract; a plain resume, which the changed code refuses; then the exit,
            a resumeAs onto the new version, perhaps with a transformState; perhaps a second
            migration, whose transform meets the input the first one recorded; perhaps a plain
            resume after them, a re-run that must be handed the recorded input."""
            flow = flow_id_of(self.log_of(execution))
            current = self.deployed(flow) if flow is not None else None
            if current is None:
                return
            if evolve and "input-validation" in features:
                program = {**current, "inputSchema": s.EVOLVED_INPUT_SCHEMA, "validateInput": True}
                if "resume-schemas" in features:  # the answers' contract evolves too (ADR 0077 D4)
                    program["resumeSchemas"] = s.evolved_resume_schemas(current)
            self.apply(Define(flow, program))
            if "resume-as" not in features:
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
            transform = transform if "state-migration" in features else None
            operation = proofs.Operation(flow, transform) if flow is not None else proofs.RESUME
            answer, options = self.approval(execution, parked, gate, answer, operation) \
                if parked is not None and gate == parked["on"] else (answer, None)
            if transform is not None:
                options = {**(options or {}), "transformState": transform}
            return gate, answer, options

        @rule(target=executions, execution=executions, transform=st.sampled_from(s.WORKING_TRANSFORMS),
              answer=s.answers, restart=st.booleans())
        @supports("load-log")
        @supports("state-migration")
        def crash_between_migration_and_resume(self, execution: str, transform: dict[str, Any], answer: Any,
                                               restart: bool):
            """ADR 0056 D2's hand-crafted history: the migration fact is recorded and the deploy
            crashed before its own resume ran. A copy of a parked execution's log gains
            EXECUTION_MIGRATED with migratedInput; a plain resume, perhaps in a new process,
            must hand the runner the migrated input."""
            parked = self.parked(execution)
            log = self.log_of(execution)
            flow = flow_id_of(log)
            target = session.trace.flows.get(flow or "")
            if parked is None or flow is None or target is None or parked.get("on") == IN_DOUBT_GATE:
                return multiple()
            outcome = expected_outcome(transform, folded_input(log), target)
            if outcome.refusal is not None:
                return multiple()
            record: dict[str, Any] = {"fromFlow": flow, "toFlow": flow}
            pinned, now = pinned_version(log), session.trace.registered.get(flow)
            if pinned is not None:
                record["fromVersion"] = pinned
            if now is not None:
                record["toVersion"] = now
            record["migratedInput"] = outcome.value
            copy_id = f"x{self.execution_count}"
            self.execution_count += 1
            events = [{"seq": e["seq"], "type": e["type"], "payload": e.get("payload")} for e in log]
            events.append({"seq": len(events) + 1, "type": "EXECUTION_MIGRATED", "payload": record})
            if not self.apply(Load(copy_id, events, None)).outcome.ok:
                return multiple()
            if restart and "restart" in features:
                self.apply(Restart())
            gate = parked["on"]
            answer, options = self.approval(copy_id, parked, gate, answer)
            self.apply(Resume(copy_id, gate, answer, options))
            return copy_id

        @rule(execution=executions, name=s.resume_names, payload=s.payloads)
        def resume_naming_a_gate(self, execution: str, name: str, payload: Any) -> None:
            self.apply(Resume(execution, name, payload))

        @rule(execution=executions, kind=s.kernel_types, payload=s.payloads)
        def resume_with_a_kernel_type(self, execution: str, kind: str, payload: Any) -> None:
            self.apply(Resume(execution, kind, payload))

        @rule(execution=executions)
        @supports("recover")
        def recover(self, execution: str) -> None:
            self.apply(Recover(execution))

        @rule(execution=executions, payload=s.answers, pick=st.integers(0, 3))
        @supports("timers")
        def wake_a_timer_as_a_caller(self, execution: str, payload: Any, pick: int) -> None:
            """A caller's TIMER_FIRED, perhaps carrying {approved: true}: under strict it is
            refused; otherwise it is a timeout carrying only wakeAt, never an approval (D5).
            It goes to an execution with a timed park, when there is one."""
            timed = sorted(self.timed)
            self.apply(Resume(timed[pick % len(timed)] if timed else execution, TIMER_FIRED, payload))

        @rule(execution=executions, decision=s.approvals, pick=st.integers(0, 7),
              fault=st.sampled_from(s.APPROVAL_FAULTS))
        @supports("security")
        def approve(self, execution: str, decision: dict[str, Any], pick: int, fault: str) -> None:
            """An approval as a real approver sends it, or with one thing wrong: a wrong, a
            retired or an unknown key, no proof, bound to another execution or park, the digest
            omitted or stale, expired, presented by another principal, or altered in flight
            (ADR 0117 D1, D2). It goes to an execution parked at a gate the authenticator
            covers, when there is one."""
            waiting = [x for x in session.executions()
                       if covers(session.trace.security, (self.parked(x) or {}).get("on", ""))]
            if not waiting and covers(session.trace.security, "approve"):
                waiting = [x for x in [self.approval_loop({"proposal": pick}, False, False)] if x is not None]
            execution = waiting[pick % len(waiting)] if waiting else execution
            parked = self.parked(execution)
            gate = parked["on"] if parked else "approve"
            payload: dict[str, Any] = dict(decision)
            if parked and parked.get("viewDigest") is not None and fault != "digest omitted":
                payload["viewDigest"] = parked["viewDigest"]
            if fault == "digest stale":
                payload["viewDigest"] = "v2:" + "0" * 64
            park = self.park_seq(execution)
            where = {"another execution": (execution + "-fork", park), "an earlier park": (execution, max(1, park - 1)),
                     "a later park": (execution, park + 1)}.get(fault, (execution, park))
            signer = {"wrong key": "ann, wrong key", "retired key": "ann, retired key", "unknown actor": "mallory",
                      "bob signs": "bob", "no proof": "nobody"}.get(fault, "ann")
            expiry = {"expired": -1, "expires now": 0}.get(fault, 60_000)
            options: dict[str, Any] = {}
            if s.SIGNERS[signer] is not None:
                actor, secret = s.SIGNERS[signer]
                claim = proofs.Claim(where[0], where[1], actor, session.trace.now + expiry, gate, payload)
                proof = proofs.sign(session, claim, secret)
                if proof is not None:
                    options["proof"] = proof
                if fault in ("principal is the signer", "principal is bob"):
                    options["principal"] = {"actor": actor if fault == "principal is the signer" else "bob"}
            if fault == "payload altered":
                payload = {**payload, "approved": not payload.get("approved")}
            elif fault == "gate altered":
                gate = "Approve" if gate == "approve" else "approve"
            elif fault == "discard flag added" and covers(session.trace.security, gate) and "legacy-scan" in features:
                # ADR 0104 D2: an override attached after signing; the signature must cover it.
                # (At a gate no authenticator covers, it would be refused discard-unverified: the
                # legacy-override corpus judges that.)
                options["discardLegacyAnswers"] = {"stepId": "h", "count": 0}
            self.remember(self.apply(Resume(execution, gate, payload, options or None)))

        @rule(target=executions, view=s.views, timed=st.booleans(), typed=st.booleans())
        @supports("security")
        def park_for_an_approval(self, view: Any, timed: bool, typed: bool):
            """An execution of the ADR's own shape: a loop that parks twice on one approval
            gate showing the same proposal, perhaps timed, perhaps with a declared contract
            (which must let viewDigest through). Approvals and replays of them land here."""
            return self.approval_loop(view, timed, typed) or multiple()

        def approval_loop(self, view: Any, timed: bool, typed: bool) -> str | None:
            program: dict[str, Any] = {"body": self.inputs_first([
                {"op": "suspend", "on": "approve", "view": view}, {"op": "observe"},
                {"op": "suspend", "on": "approve", "view": view}, {"op": "observe"}, {"op": "complete"}])}
            if "view-digest" not in features:
                program["body"] = [{k: v for k, v in op.items() if k != "view"} for op in program["body"]]
            if timed and "timers" in features:
                next(op for op in program["body"] if op["op"] == "suspend")["timeout"] = s.TIMEOUTS[1]
            if typed and "resume-schemas" in features:
                program["resumeSchemas"] = {"approve": s.DIGESTED_APPROVAL_SCHEMA}
            flow = self.define(program)
            started = self.start(flow, s.LEGACY_INPUT) if isinstance(flow, str) else None
            return started if isinstance(started, str) else None

        @rule(target=executions, at=st.sampled_from(("after-effect", "before-effect")),
              attempts=st.sampled_from(([1], [1, 2])), output=s.payloads,
              verdict=st.none() | st.sampled_from(s.VERDICTS))
        @supports("in-doubt", "recover")  # its step crashes: a program that needs recovery
        def crash_in_doubt(self, at: str, attempts: list[int], output: Any, verdict: str | None):
            """ADR 0104's own case, directly: a non-idempotent effect whose worker dies, so the
            next drive is in doubt and an operator's verdict decides; then a gate. Perhaps
            driven there at once: recovered, then the verdict given."""
            flow = self.define({"body": self.inputs_first([
                {"op": "step", "id": "charge", "kind": "non-idempotent", "output": output,
                 "crash": {"at": at, "attempts": attempts}},
                {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}])})
            execution = self.start(flow, s.LEGACY_INPUT) if isinstance(flow, str) else None
            if isinstance(execution, str) and verdict is not None:
                self.answer_gates_until_done(execution, [output, output], verdict)
            return execution if isinstance(execution, str) else multiple()

        @rule(target=executions, human_gate=st.sampled_from(s.HUMAN_GATES))
        @supports("human-steps")
        def a_human_step_then_a_gate(self, human_gate: str):
            """ADR 0104 D1's human step directly: its answer completes it, and every re-run
            replays it by consuming that entry again, so the gate after it never gets it."""
            flow = self.define({"body": self.inputs_first([
                {"op": "step", "id": "review", "kind": "human", "on": human_gate}, {"op": "observe"},
                {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}])})
            return self.start(flow, s.LEGACY_INPUT) if isinstance(flow, str) else multiple()

        @rule(target=executions, decision=st.sampled_from(s.DECISION_IDS), choices=st.tuples(st.integers(0, 2),
                                                                                             st.integers(0, 2)))
        @supports("emit-guard")
        def decide_inside_an_effect(self, decision: str, choices: tuple[int, int]):
            """ADR 0104 D1 directly: an effect emits a decision under an id the flow then
            decides itself; the effect's must land in its own namespace, never pre-empt it."""
            flow = self.define({"body": self.inputs_first([
                {"op": "step", "id": "tool", "output": None,
                 "emits": [{"type": "DECISION_RECORDED", "payload": {"decisionId": decision, "choice": choices[0]}}]},
                {"op": "decide", "id": decision if not decision.startswith("__loom_") else "d1", "choice": choices[1]},
                {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}])})
            return self.start(flow, s.LEGACY_INPUT) if isinstance(flow, str) else multiple()

        def inputs_first(self, body: list[dict[str, Any]]) -> list[dict[str, Any]]:
            """A purpose-built flow records the input each run is handed (ADR 0056 D2) too."""
            return ([{"op": "input"}] if "state-migration" in features else []) + body

        def remember(self, step: Any) -> None:
            if step.outcome.ok and isinstance(step.op, Resume) and (step.op.options or {}).get("proof"):
                self.granted.append(step.op)

        @precondition(lambda self: bool(self.granted))
        @rule(pick=st.integers(0, 3), execution=executions)
        def replay_an_approval(self, pick: int, execution: str) -> None:
            """An accepted signed approval, sent again: at the same execution's next park (a
            loop) or at another execution (a fork). It holds for one park only (ADR 0117 D2)."""
            sent = self.granted[pick % len(self.granted)]
            self.apply(Resume(execution, sent.type, sent.payload, sent.options))

        @precondition(lambda self: "timers" in features and bool(self.timed))
        @rule(ms=st.sampled_from((60_000, 1_000, 500)))  # the largest first: a counterexample shrinks to one advance
        def advance_clock(self, ms: int) -> None:
            """Time passes; the runtime's timer service wakes what is due (ADR 0117 D5)."""
            self.apply(AdvanceClock(ms))


    return GateMachine


@dataclass
class StatefulResult:
    examples: dict[str, int] = field(default_factory=dict)
    examples_to_failure: dict[str, int] = field(default_factory=dict)  # before shrinking: how hard it was to find
    steps: int = 0
    failures: dict[str, InvariantViolated] = field(default_factory=dict)
    errors: list[ImplementationFailedInRun | TransportFaultInRun] = field(default_factory=list)
    crashes: list[ImplementationFailedInRun] = field(default_factory=list)  # examples a driver exception ended


def run_stateful(session: Session, invariant_ids: list[str], budget: Budget, seed: int | None = None,
                 on_example: Callable[[int], None] | None = None,
                 database: ExampleDatabase | None = None) -> StatefulResult:
    """Run the machine over the given invariants; when some fail, run again
    without them, so one failure does not hide another. Every round that does not
    end the loop fails at least one more invariant, so the loop ends with every
    invariant either failed or explored for the whole budget (or with an error):
    a pass is never a truncated exploration.

    `database`: a Hypothesis example database (issue 9, campaigns): each round's failing
    examples are saved there, scoped to that round's invariants, and replayed first
    by the next run of the same selection."""
    result = StatefulResult()
    remaining = list(invariant_ids)
    for _ in range(len(remaining) + 1):
        if not remaining:
            break
        counters = Counters(on_example=on_example)
        machine = build_machine(session, remaining, counters)
        # A derandomised profile runs from a fixed seed: Hypothesis would otherwise derive it
        # from the machine class's source text, so any edit to this file (or a process that
        # reads that source differently) would change every example the profile draws.
        chosen = seed if seed is not None else (DERANDOMIZED_SEED if budget.derandomize else None)
        if chosen is not None:
            machine = hypothesis.seed(chosen)(machine)
        found = _run_once(machine, budget, False, scoped(database, *sorted(remaining)))
        judged = counters.examples - len(counters.crashes)  # an example a driver exception ended judged nothing
        for invariant_id in remaining:
            result.examples[invariant_id] = result.examples.get(invariant_id, 0) + judged
        result.steps += counters.steps
        result.crashes.extend(counters.crashes)
        new = [f for f in found if isinstance(f, InvariantViolated)]
        result.errors.extend(f for f in found if isinstance(f, (ImplementationFailedInRun, TransportFaultInRun)))
        for failure in new:
            invariant_id = failure.violations[0].invariant
            result.failures.setdefault(invariant_id, failure)
            if invariant_id in counters.first_failure:
                earlier_rounds = result.examples.get(invariant_id, 0) - counters.examples
                result.examples_to_failure.setdefault(invariant_id, earlier_rounds + counters.first_failure[invariant_id])
        if not new:
            break
        remaining = [i for i in remaining if i not in result.failures]
        if result.errors:
            break  # a crashing implementation would crash the next round the same way
    return result


@contextmanager
def stable_generation() -> Iterator[None]:
    """Hypothesis draws a few values from constants it mines from every *local*
    module loaded (not stdlib, not site-packages). The examples of a derandomised
    run would then change with the set of modules imported, with any edit to their
    literals, and between an editable and a wheel install: the same kernel could
    pass in one process and fail in another. For loomcheck's own runs the pool is
    pinned empty. This touches a private Hypothesis API, so it degrades to a no-op
    if that API moves (the run stays correct, only less reproducible)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without this module
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    current = getattr(providers, "_local_constants", None)
    try:
        pinned = copy.deepcopy(current)
        for pool in vars(pinned).values():
            pool.clear()
    except (TypeError, AttributeError):  # pragma: no cover - the private API moved
        pinned = None
    if original is None or pinned is None:
        yield
        return
    providers._get_local_constants = lambda: pinned
    try:
        yield
    finally:
        providers._get_local_constants = original


def _run_once(machine: type[RuleBasedStateMachine], budget: Budget, derandomize: bool,
              database: ExampleDatabase | None = None) -> list[BaseException]:
    config = settings(
        max_examples=budget.max_examples,
        stateful_step_count=budget.steps,
        derandomize=derandomize,
        database=database,  # None but in a campaign: ci's examples never depend on an earlier run
        deadline=None,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=True,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),  # reuse: the database's examples first
        print_blob=False,
    )
    try:
        with stable_generation():
            run_state_machine_as_test(machine, settings=config)
    except (InvariantViolated, ImplementationFailedInRun, TransportFaultInRun) as failure:
        return [failure]
    except hypothesis.errors.Unsatisfiable:
        return []  # every example ended in a driver exception: Counters.crashes has them
    except hypothesis.errors.Flaky as flaky:
        # The same operations gave different results when Hypothesis ran them again: the
        # implementation is nondeterministic (or keeps state across a reset). Its finding.
        failed = ImplementationFailed("state machine", f"the same script behaved differently when run again, so "
                                                       f"the implementation is nondeterministic or reset() does not "
                                                       f"forget everything ({type(flaky).__name__})", "nondeterministic")
        return [ImplementationFailedInRun(failed, [])]
    except BaseExceptionGroup as group:
        found = [e for e in _flatten(group) if isinstance(e, (InvariantViolated, ImplementationFailedInRun, TransportFaultInRun))]
        stops = [e for e in _flatten(group) if not isinstance(e, Exception) and e not in found]
        if stops:
            raise stops[0]  # the run was stopped (deadline, budget, interrupt): not a finding of this example
        return found
    return []


def _flatten(group: BaseExceptionGroup) -> Iterable[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _flatten(exc)
        else:
            yield exc
