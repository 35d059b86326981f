"""The state machine's rules for ADR 0117, approvals bound to what the approver saw: how the
deployment is composed, signed approvals as a real approver sends them or with one thing
wrong, replays of accepted ones, and timers (D5)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, precondition, rule

from loomcheck.contract import proofs
from loomcheck.contract.script import AdvanceClock, Configure, Operation, Resume
from loomcheck.contract.session import Step
from loomcheck.contract.signing import covers
from loomcheck.machine import strategies as s
from loomcheck.machine.kernel_rules import KernelRules, supports
from loomcheck.spec.names import TIMER_FIRED

# How `approve` signs an approval with one thing wrong (s.APPROVAL_FAULTS): who signs it and
# when it expires; a fault not named here is signed as a real approver signs.
SIGNER_OF = {"wrong key": "ann, wrong key", "retired key": "ann, retired key", "unknown actor": "mallory",
             "bob signs": "bob", "no proof": "nobody"}
EXPIRY_OF = {"expired": -1, "expires now": 0}


class ApprovalRules(KernelRules):
    def __init__(self) -> None:
        super().__init__()
        self.granted: list[Resume] = []  # signed approvals the kernel accepted, to replay
        self.timed: set[str] = set()  # executions parked with a wakeAt: only then does time matter

    def apply(self, op: Operation) -> Step:
        step = super().apply(op)
        self.note_timers(step)
        return step

    def note_timers(self, step: Step) -> None:
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
        if "security" in self.features and config is not None:
            self.apply(Configure(s.SECURITY_CONFIGS[config]))

    def approval(self, execution: str, parked: dict[str, Any] | None, gate: str, payload: Any,
                 operation: proofs.Operation = proofs.RESUME) -> tuple[Any, dict[str, Any] | None]:
        """What a well-behaved approver sends: the parked digest echoed and, where an
        authenticator covers the gate, ann's signature for this park (ADR 0117 D1, D2) and
        the operation it is sent with (spec/signing.md section 10)."""
        trace = self.session.trace
        digest = (parked or {}).get("viewDigest")
        if digest is not None and gate != TIMER_FIRED:
            payload = {**payload, "viewDigest": digest} if isinstance(payload, dict) else \
                {"value": payload, "viewDigest": digest}
        if not covers(trace.security, gate):
            return payload, None
        actor, secret = s.SIGNERS["ann"]
        claim = proofs.Claim(execution, self.park_seq(execution), actor, trace.now + 60_000, gate, payload,
                             operation=operation, incarnation=proofs.incarnation(trace, execution))
        proof = proofs.sign(self.session, claim, secret)
        return payload, ({"proof": proof} if proof is not None else None)

    def remember(self, step: Step) -> None:
        if step.outcome.ok and isinstance(step.op, Resume) and (step.op.options or {}).get("proof"):
            self.granted.append(step.op)

    @rule(execution=KernelRules.executions, decision=s.approvals, pick=st.integers(0, 7),
          fault=st.sampled_from(s.APPROVAL_FAULTS))
    @supports("security")
    def approve(self, execution: str, decision: dict[str, Any], pick: int, fault: str) -> None:
        """An approval as a real approver sends it, or with one thing wrong: a wrong, a
        retired or an unknown key, no proof, bound to another execution or park, the digest
        omitted or stale, expired, presented by another principal, or altered in flight
        (ADR 0117 D1, D2). It goes to an execution parked at a gate the authenticator
        covers, when there is one."""
        security = self.session.trace.security
        waiting = [x for x in self.session.executions() if covers(security, (self.parked(x) or {}).get("on", ""))]
        if not waiting and covers(security, "approve"):
            waiting = [x for x in [self.approval_loop({"proposal": pick}, False, False)] if x is not None]
        execution = waiting[pick % len(waiting)] if waiting else execution
        parked = self.parked(execution)
        gate = parked["on"] if parked else "approve"
        payload: dict[str, Any] = dict(decision)
        if parked and parked.get("viewDigest") is not None and fault != "digest omitted":
            payload["viewDigest"] = parked["viewDigest"]
        if fault == "digest stale":
            payload["viewDigest"] = "v2:" + "0" * 64
        options = self.faulty_proof(execution, gate, payload, fault)
        if fault == "payload altered":
            payload = {**payload, "approved": not payload.get("approved")}
        elif fault == "gate altered":
            gate = "Approve" if gate == "approve" else "approve"
        elif fault == "discard flag added" and covers(security, gate) and "legacy-scan" in self.features:
            # ADR 0104 D2: an override attached after signing; the signature must cover it.
            # (At a gate no authenticator covers, it would be refused discard-unverified: the
            # legacy-override corpus judges that.)
            options["discardLegacyAnswers"] = {"stepId": "h", "count": 0}
        self.remember(self.apply(Resume(execution, gate, payload, options or None)))

    def faulty_proof(self, execution: str, gate: str, payload: Any, fault: str) -> dict[str, Any]:
        """The options `approve` sends: a proof signed, bound and timed as `fault` says, and the
        principal presenting it."""
        park = self.park_seq(execution)
        where = {"another execution": (execution + "-fork", park), "an earlier park": (execution, max(1, park - 1)),
                 "a later park": (execution, park + 1)}.get(fault, (execution, park))
        signer = SIGNER_OF.get(fault, "ann")
        expiry = EXPIRY_OF.get(fault, 60_000)
        options: dict[str, Any] = {}
        if s.SIGNERS[signer] is not None:
            actor, secret = s.SIGNERS[signer]
            claim = proofs.Claim(where[0], where[1], actor, self.session.trace.now + expiry, gate, payload)
            proof = proofs.sign(self.session, claim, secret)
            if proof is not None:
                options["proof"] = proof
            if fault in ("principal is the signer", "principal is bob"):
                options["principal"] = {"actor": actor if fault == "principal is the signer" else "bob"}
        return options

    @rule(target=KernelRules.executions, view=s.views, timed=st.booleans(), typed=st.booleans())
    @supports("security")
    def park_for_an_approval(self, view: Any, timed: bool, typed: bool) -> Any:
        """An execution of the ADR's own shape: a loop that parks twice on one approval
        gate showing the same proposal, perhaps timed, perhaps with a declared contract
        (which must let viewDigest through). Approvals and replays of them land here."""
        return self.approval_loop(view, timed, typed) or multiple()

    def approval_loop(self, view: Any, timed: bool, typed: bool) -> str | None:
        program: dict[str, Any] = {"body": self.inputs_first([
            {"op": "suspend", "on": "approve", "view": view}, {"op": "observe"},
            {"op": "suspend", "on": "approve", "view": view}, {"op": "observe"}, {"op": "complete"}])}
        if "view-digest" not in self.features:
            program["body"] = [{k: v for k, v in op.items() if k != "view"} for op in program["body"]]
        if timed and "timers" in self.features:
            next(op for op in program["body"] if op["op"] == "suspend")["timeout"] = s.TIMEOUTS[1]
        if typed and "resume-schemas" in self.features:
            program["resumeSchemas"] = {"approve": s.DIGESTED_APPROVAL_SCHEMA}
        flow = self.define(program)
        started = self.start(flow, s.LEGACY_INPUT) if isinstance(flow, str) else None
        return started if isinstance(started, str) else None

    @precondition(lambda self: bool(self.granted))
    @rule(pick=st.integers(0, 3), execution=KernelRules.executions)
    def replay_an_approval(self, pick: int, execution: str) -> None:
        """An accepted signed approval, sent again: at the same execution's next park (a
        loop) or at another execution (a fork). It holds for one park only (ADR 0117 D2)."""
        sent = self.granted[pick % len(self.granted)]
        self.apply(Resume(execution, sent.type, sent.payload, sent.options))

    # -- timers (ADR 0117 D5) ------------------------------------------------------------

    @precondition(lambda self: "timers" in self.features and bool(self.timed))
    @rule(ms=st.sampled_from((60_000, 1_000, 500)))  # the largest first: a counterexample shrinks to one advance
    def advance_clock(self, ms: int) -> None:
        """Time passes; the runtime's timer service wakes what is due (ADR 0117 D5)."""
        self.apply(AdvanceClock(ms))

    @rule(execution=KernelRules.executions, payload=s.answers, pick=st.integers(0, 3))
    @supports("timers")
    def wake_a_timer_as_a_caller(self, execution: str, payload: Any, pick: int) -> None:
        """A caller's TIMER_FIRED, perhaps carrying {approved: true}: under strict it is
        refused; otherwise it is a timeout carrying only wakeAt, never an approval (D5).
        It goes to an execution with a timed park, when there is one."""
        timed = sorted(self.timed)
        self.apply(Resume(timed[pick % len(timed)] if timed else execution, TIMER_FIRED, payload))
