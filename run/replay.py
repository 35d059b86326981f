"""Replaying a regression log: run its operations on an implementation, check
every predicate after every step, and compare with what the log expects."""

from __future__ import annotations

import re

from dataclasses import dataclass, field, replace
from typing import Any

from loomcheck.contract.script import Operation, Resume, ResumeAs, from_model, to_json
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step, hello_of
from loomcheck.properties.explain import Explanation, explain
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import TERMINAL, final_moment, park_seq
from loomcheck.contract import proofs
from loomcheck.contract.signing import rejection
from loomcheck.spec.canonical import view_digest
from loomcheck.spec.programs import SuspendOp
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import all_predicates, check_step
from loomcheck.spec.names import APPROVAL_GRANTED
from loomcheck.spec.observables import observed
from loomcheck.spec.profiles import admissible_reasons, profile
from loomcheck.spec.regressions import Expectation, RegressionLog
from loomcheck.spec.versions import VERSION_FIELDS
from loomcheck.spec.vocabulary import kernel_event_types

V2_DIGEST = re.compile(r"v2:[0-9a-f]{64}")


@dataclass
class ReplayResult:
    violations: list[Violation] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)  # per operation: the refusal's error type
    kinds: list[str] = field(default_factory=list)          # per operation: its "op", for admissible reasons
    logs: dict[str, list[dict]] = field(default_factory=dict)
    snapshots: dict[str, dict] = field(default_factory=dict)  # imported executions' snapshots, for explanations
    # Per operation: its execution, the seq of that execution's last event before it, and the seqs it appended.
    marks: list[tuple[str | None, int | None, list[int]]] = field(default_factory=list)
    # Per operation: every execution it appended to (recover-abandoned and timers drive several), with the seqs.
    appended: list[dict[str, list[int]]] = field(default_factory=list)
    failure: ImplementationFailed | None = None

    def violated(self, invariant_id: str) -> list[Violation]:
        return [v for v in self.violations if v.invariant == invariant_id]

    def explain(self, violation: Violation) -> Explanation:
        """Why `violation` holds, from this run's logs (properties/explain.py)."""
        return explain(violation, self.logs, self.snapshots)


def outcome_label(step) -> str:
    if step.recovered is not None:
        return "ok:" + ",".join(step.recovered)
    if not step.outcome.ok:
        return f"refused:{step.outcome.reason}"
    return "ok:crashed" if step.outcome.crashed else "ok"


def appended_by(step: Step) -> dict[str, list[int]]:
    """The seqs one step appended, per execution: its own, or each log an operation across
    executions grew."""
    logs = step.others or ({step.execution: (step.log_before, step.log_after)} if step.execution else {})
    grown = {execution: [e.get("seq") for e in after[len(before):]] for execution, (before, after) in logs.items()}
    return {execution: [s for s in seqs if type(s) is int] for execution, seqs in grown.items() if seqs}


def run_operations(session: Session, operations: list[Operation], invariant_ids: list[str] | None = None) -> ReplayResult:
    """Apply the operations from an empty implementation; check predicates after each."""
    ids = list(invariant_ids) if invariant_ids is not None else list(all_predicates())
    result = ReplayResult()
    try:
        session.reset()
        for op in operations:
            step = session.apply(_echo_parked_digest(session, op))
            result.outcomes.append(outcome_label(step))
            result.errors.append(None if step.outcome.ok else step.outcome.error)
            result.kinds.append(str(to_json(op).get("op")))
            result.marks.append((step.execution, step.log_before[-1].get("seq") if step.log_before else None,
                                 [e.get("seq") for e in step.log_after[len(step.log_before):]]))
            result.appended.append(appended_by(step))
            result.violations.extend(check_step(step, session.trace, ids))
        for execution in session.executions():
            result.logs[execution] = session.read_log(execution)
        result.snapshots = dict(session.trace.snapshots)
    except ImplementationFailed as failed:
        result.failure = failed
    return result


def _echo_parked_digest(session: Session, op: Operation) -> Operation:
    """A log echoes loomcheck's digest of the parked gate's view (spec/canonical-json.md). A kernel
    whose canonical JSON has other bytes (profile choice canonical-json) parked with its own, and
    the echo means "what the approver was shown": it is sent as the kernel's digest, and a proof
    that was valid for the log's payload is signed again for it (spec/signing.md). For a kernel
    with loomcheck's bytes nothing changes."""
    if not isinstance(op, (Resume, ResumeAs)) or not isinstance(op.payload, dict) \
            or type(op.payload.get("viewDigest")) is not str:
        return op
    last = next((s for s in reversed(session.trace.steps) if s.execution == op.execution and s.state_after), None)
    state = last.state_after if last is not None else None
    condition = (state or {}).get("suspendedOn") if (state or {}).get("status") == "suspended" else None
    program = session.trace.flows.get(str((state or {}).get("flowId")))
    if not isinstance(condition, dict) or program is None:
        return op
    own, echoed = condition.get("viewDigest"), op.payload["viewDigest"]
    ours = {view_digest(p.view) for p in program.suspend_points()
            if isinstance(p, SuspendOp) and p.on == condition.get("on") and p.has_view()}
    if echoed not in ours or type(own) is not str or own == echoed or not V2_DIGEST.fullmatch(own):
        return op
    payload = {**op.payload, "viewDigest": own}
    return replace(op, payload=payload, options=_signed_again(session, op, payload, last))


def _signed_again(session: Session, op: Resume | ResumeAs, payload: dict, last: Any) -> dict | None:
    options = op.options
    proof = (options or {}).get("proof")
    parked_at = last.parked_at if last.parked_at is not None else park_seq(last.log_after)
    bound = proofs.binding_of(session.trace, op)  # valid for this very operation (spec/signing.md section 10)
    if not isinstance(proof, dict) or parked_at is None or rejection(
            session.trace.security, session.trace.now, op.type, op.payload, options, op.execution, parked_at,
            bound) is not None:
        return options  # no proof, or one that was never valid: a tampering case stays one
    discard = (options or {}).get("discardLegacyAnswers") or False
    claim = proofs.Claim(op.execution, parked_at, proof["actor"], proof["exp"], op.type, op.payload, discard,
                         proofs.Operation.of(op), proofs.incarnation(session.trace, op.execution))
    secret = proofs.signer_of(session, claim, {k: proof.get(k) for k in ("actor", "exp", "signature")})
    if secret is None:
        return options
    # Through the one place proofs come from: a kernel that signs its own gets its own (contract/proofs.py).
    again = proofs.sign(session, replace(claim, payload=payload), secret)
    return {**(options or {}), "proof": {**proof, **again}} if again is not None else options


def run_on_reference(operations: list[Operation], transport: Any = None) -> ReplayResult:
    """The operations on the reference kernel, from empty, no predicate checked: what the decisions
    expect. A script that kills the kernel gets a reference in a process of its own, on SQLite."""
    from loomcheck.run.loading import killable, needs_a_process
    from loomcheck.reference.driver import ReferenceDriver

    reference = killable("reference", transport) if needs_a_process(operations) else ReferenceDriver(store="memory")
    try:
        return run_operations(Session(reference, frozenset(hello_of(reference).features)), operations, [])
    finally:
        reference.close()


def expectation_of(result: ReplayResult) -> Expectation:
    """The reference's run as an expectation: each refusal with every reason a correct kernel may
    give instead (spec/profiles.toml), and the order choices its logs meet."""
    outcomes: list[str | list[str]] = []
    for index, (kind, outcome) in enumerate(zip(result.kinds, result.outcomes)):
        reasons = admissible_reasons(kind, outcome[len("refused:"):], _situation(result, index)) \
            if outcome.startswith("refused:") else ()
        outcomes.append([f"refused:{r}" for r in reasons] if len(reasons) > 1 else outcome)
    orders = [c.id for c in profile().choice if c.kind == "order" and _meets(c.id, result.logs)]
    return Expectation.model_validate({"outcomes": outcomes, "errors": result.errors, "orders": orders,
                                       "logs": result.logs})


def _situation(result: ReplayResult, index: int) -> str | None:
    """Where the admissible reasons of a refusal depend on it (spec/profiles.toml): the state of
    the operation's execution just before it, from the run's own log."""
    if index >= len(result.marks):
        return None
    execution, before, _ = result.marks[index]
    if execution is None:
        return None
    prefix = [e for e in result.logs.get(execution, []) if isinstance(e.get("seq"), int) and e["seq"] <= (before or 0)]
    moment = final_moment(prefix, result.snapshots.get(execution))
    if moment.status in TERMINAL:
        return "terminal"
    return "park-gone" if moment.status == "suspended" and park_seq(prefix) is None else None


def replay(session: Session, log: RegressionLog, invariant_ids: list[str] | None = None) -> ReplayResult:
    operations = [from_model(m) for m in log.operations]
    result = run_operations(session, operations, invariant_ids)
    if log.expect is not None and result.failure is None:
        result.differences = compare(log.expect, result, versioned="code-versions" in session.features,
                                     digests=view_digests(log))
    return result


def view_digests(log: RegressionLog) -> frozenset[str]:
    """loomcheck's digests (spec/canonical-json.md) of the views the log's flows show."""
    from loomcheck.spec.programs import FlowProgram

    found = set()
    for model in log.operations:
        program = getattr(model, "program", None)
        if isinstance(program, dict):
            try:
                parsed = FlowProgram.model_validate(program)
            except ValueError:
                continue
            found |= {view_digest(p.view) for p in parsed.suspend_points() if isinstance(p, SuspendOp) and p.has_view()}
    return frozenset(found)


def compare(expect: Expectation, result: ReplayResult, versioned: bool = True,
            digests: frozenset[str] = frozenset()) -> list[str]:
    """What differs from the expected observables, first difference per execution: each outcome
    (a refusal by its reason, and its error type where the log records it; any of the listed
    outcomes is correct), and each log by event types in order and the payload fields a decision
    defines (spec/observables.toml). Messages, labels and fields a kernel adds are never compared.
    A kernel without the "code-versions" feature is compared without the version fields. A view's
    digest in `digests` (loomcheck's bytes) matches any v2: digest the kernel records for the same
    view throughout (profile choice canonical-json; approvals.digest-bytes judges the bytes)."""
    found: list[str] = []
    own: dict[str, str] = {}  # loomcheck's digest of a view -> the kernel's
    errors = expect.errors or []
    for index, (want, got) in enumerate(zip(expect.outcomes, result.outcomes)):
        acceptable = want if isinstance(want, list) else [want]
        if got not in acceptable:
            shown = " or ".join(acceptable)
            found.append(f"operation {index + 1}: expected {shown}, got {got}")
        elif index < len(errors) and errors[index] is not None and index < len(result.errors) \
                and result.errors[index] != errors[index]:
            found.append(f"operation {index + 1}: expected {got} as {errors[index]}, got {got} as {result.errors[index]}")
    for execution, events in expect.logs.items():
        wanted = _in_order([e.model_dump() for e in events], expect.orders)
        got = _in_order(result.logs.get(execution, []), expect.orders)
        for want, have in zip(wanted, got):
            have = _as_ours(want, have, digests, own)
            skip = () if versioned else VERSION_FIELDS.get(want["type"], ())
            if want["type"] != have.get("type") or not json_equal(observed(want["type"], want["payload"], skip),
                                                                  observed(want["type"], have.get("payload"), skip)):
                found.append(f"{execution} #{want['seq']}: expected {want['type']} {show(want['payload'], 50)}, "
                             f"got {have.get('type')} {show(have.get('payload'), 50)}")
                break
        else:
            if len(wanted) != len(got):
                extra = got[len(wanted):] or wanted[len(got):]
                which = "also has" if len(got) > len(wanted) else "lacks"
                found.append(f"{execution}: the log {which} " + ", ".join(
                    f"#{e.get('seq')} {e.get('type')}" for e in extra[:4]) + f" ({len(got)} events, expected {len(wanted)})")
    return found


def _as_ours(want: dict, have: dict, digests: frozenset[str], own: dict[str, str]) -> dict:
    """`have` with the kernel's digest of a view written as loomcheck's wherever it appears (the
    park's condition, and every echo of it: the answer, what the gate observed), where it
    consistently stands for the same view: one kernel digest per view, one view per digest."""
    condition = (want.get("payload") or {}).get("condition") if isinstance(want.get("payload"), dict) else None
    theirs = (have.get("payload") or {}).get("condition") if isinstance(have.get("payload"), dict) else None
    if want.get("type") == "EXECUTION_SUSPENDED" and isinstance(condition, dict) and isinstance(theirs, dict):
        ours, recorded = condition.get("viewDigest"), theirs.get("viewDigest")
        if ours in digests and type(recorded) is str and V2_DIGEST.fullmatch(recorded) \
                and recorded not in own.values() and ours not in own:
            own[ours] = recorded
    back = {theirs: ours for ours, theirs in own.items() if theirs != ours}
    return {**have, "payload": _replaced(have.get("payload"), back)} if back else have


def _replaced(value: Any, back: dict[str, str]) -> Any:
    if isinstance(value, str):
        return back.get(value, value)
    if isinstance(value, dict):
        return {k: _replaced(v, back) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, back) for v in value]
    return value


def _answer_then_grant(events: list[dict], index: int) -> bool:
    """A gate's resume-typed event directly followed by the APPROVAL_GRANTED of the same resume."""
    return (index + 1 < len(events) and events[index + 1].get("type") == APPROVAL_GRANTED
            and events[index].get("type") not in kernel_event_types())


def _meets(order: str, logs: dict[str, list[dict]]) -> bool:
    if order == "approval-position":
        return any(e.get("type") == APPROVAL_GRANTED for events in logs.values() for e in events)
    return False


def _in_order(events: list[dict], orders: list[str]) -> list[dict]:
    """The events with each admissible order put one way (ADR 0117 D2 records the evidence, not
    where: APPROVAL_GRANTED before or after the gate's resume-typed event), keeping seqs in place."""
    if "approval-position" not in orders:
        return list(events)
    ordered = list(events)
    for index in range(len(ordered) - 1):
        if _answer_then_grant(ordered, index):
            first, second = ordered[index], ordered[index + 1]
            ordered[index], ordered[index + 1] = {**second, "seq": first.get("seq")}, {**first, "seq": second.get("seq")}
    return ordered


def difference_violation(invariant: str, log_name: str, difference: str, result: ReplayResult) -> Violation:
    """A difference from a regression log's expectation (compare's wording) as a violation of the
    invariant the log backs, citing the first differing event, or the log's end for an outcome."""
    first = re.match(r"(?P<x>.+?) #(?P<seq>\d+): expected (?P<want>.+?), got ", difference)
    if first is not None and first.group("x") in result.logs:
        return Violation(invariant, f"{log_name}: {difference}", (int(first.group("seq")),),
                         ("the first event that differs from what the committed regression log expects",),
                         f"#{first.group('seq')} {first.group('want')}, as {log_name} records it", first.group("x"))
    outcome = re.match(r"operation (?P<n>\d+): expected (?P<want>.+?), got ", difference)
    if outcome is not None:
        number = int(outcome.group("n"))
        execution, before, appended = result.marks[number - 1] if number <= len(result.marks) else (None, None, [])
        cited = [(seq, f"appended by operation {number}") for seq in appended[:4]] or \
                [(before, f"the last event before operation {number}")] if before is not None or appended else []
        return Violation(invariant, f"{log_name}: {difference}", tuple(s for s, _ in cited), tuple(r for _, r in cited),
                         f"operation {number} {outcome.group('want')}, as {log_name} records it", execution)
    return Violation(invariant, f"{log_name}: {difference}")


def minimise(session: Session, operations: list[Operation], invariant_id: str, budget: int = 300,
             reference: Session | None = None) -> tuple[list[Operation], ReplayResult | None]:
    """Delete operations one at a time, keeping each deletion after which the script
    still violates the invariant, until none can go (or `budget` replays are spent).
    Hypothesis shrinks the rule sequence it drew; this shrinks the script itself,
    which is what a reader replays. With a `reference` session, a deletion is kept only
    if the reference still passes the shorter script, so the counterexample stays one
    that a conforming kernel passes. Returns the script and its replay (None when the
    original no longer reproduces: a nondeterministic implementation)."""
    current = list(operations)
    last = run_operations(session, current, [invariant_id])
    if last.failure is not None or not last.violated(invariant_id):
        return current, None
    tries, changed = 0, True
    while changed and tries < budget:
        changed = False
        for index in reversed(range(len(current))):
            if tries >= budget:
                break
            candidate = current[:index] + current[index + 1:]
            tries += 1
            result = run_operations(session, candidate, [invariant_id])
            if result.failure is None and result.violated(invariant_id) and _passes(reference, candidate, invariant_id):
                current, last, changed = candidate, result, True
    return current, last


def _passes(reference: Session | None, operations: list[Operation], invariant_id: str) -> bool:
    if reference is None:
        return True
    result = run_operations(reference, operations, [invariant_id])
    return result.failure is None and not result.violated(invariant_id)
