"""The signature-tampering corpus (ADR 0117 D2), through the driver: every tampering of
fuzz/tampering.py sent as a resume of a parked execution must be refused and append nothing,
and the untampered approval is accepted; beyond the ADR, approvals for another operation or
incarnation (spec/signing.md section 10). docs/approvals.md, "The tampering corpus"."""

from __future__ import annotations

from typing import Any, Iterator

from loomcheck.fuzz.own_proofs import own_proof_mutations
from loomcheck.fuzz.tampering import PROOF_CATEGORIES, tamperings
from loomcheck.contract import proofs
from loomcheck.contract.needs import Undeclared
from loomcheck.contract.script import Configure, Define, Resume, ResumeAs, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step
from loomcheck.corpora.result import CorpusResult
from loomcheck.contract.logview import park_seq
from loomcheck.contract.jsonvalues import show
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step

ID = "approvals.signature-bound"
ACTOR, SECRET = "ann", "ann-approver-secret-0001"
OTHER = ("bob", "bob-approver-secret-0002")
GATE = "approve"
FLOW = {"body": [{"op": "suspend", "on": GATE, "view": {"pay": 120, "to": "acct-7"}}, {"op": "observe"},
                 {"op": "suspend", "on": GATE, "view": {"pay": 120, "to": "acct-7"}}, {"op": "observe"},
                 {"op": "complete", "output": "paid"}]}
# The approvals tampered with: a plain one, a refusal with nested data, numbers and non-ASCII text.
DECISIONS = ({"approved": True, "note": "looks right"},
             {"approved": False, "reason": {"code": 3, "tags": ["limit", "weekend"]}},
             {"approved": True, "amount": 12.5, "to": "compte-é", "count": 3})
DECISION = DECISIONS[0]
STRANGERS = ("mallory", "ann-unknown", "__proto__")
# A kernel without views (feature "view-digest") approves the same gates, showing nothing to bind.
PLAIN_FLOW = {"body": [{k: v for k, v in op.items() if k != "view"} for op in FLOW["body"]]}
BOUND = "approvals.operation-bound"
CHECKED = (ID, BOUND, "approvals.digest-echoed", "approvals.granted-evidence", "refusal.append-nothing",
           "refusal.typed-reason")
# The extension's cases are judged only by what they are about: ADR 0117 D2 grants some of them.
BOUND_CHECKED = (BOUND, "approvals.granted-evidence", "refusal.append-nothing", "refusal.typed-reason")
TARGET, ELSEWHERE = "g", "h"  # the flows a resumeAs moves the execution to
TARGET_FLOW = {"body": [{"op": "input"}, {"op": "complete", "output": "paid elsewhere"}]}
TRANSFORM = {"name": "wrap", "key": "smuggled"}  # the input the target runs with, which no approver saw


def config() -> dict[str, Any]:
    return {"authenticator": {"gates": [GATE], "keys": {ACTOR: SECRET, OTHER[0]: OTHER[1]}}}


def run_tampering(session: Session, invariant_ids: tuple[str, ...] = (ID,)) -> CorpusResult:
    result = CorpusResult()
    try:
        _run(session, result, invariant_ids)
    except Undeclared as undeclared:  # a feature a case needs (the override's: "legacy-scan")
        result.skip(undeclared)
    except ImplementationFailed as failed:
        if failed.reason:
            raise  # its process hung, died or broke the protocol: a finding of the run, not a violation
        result.violations.append(Violation(ID, f"the implementation failed during the tampering corpus: {failed}"))
    result.violations = [v for v in result.violations if v.invariant in invariant_ids or v.invariant not in CHECKED]
    return result


def _setup(session: Session, *executions: str, targets: tuple[str, ...] = ()) -> None:
    session.reset()
    session.apply(Configure(config()))
    session.apply(Define("f", FLOW if "view-digest" in session.features else PLAIN_FLOW))
    for target in targets:
        session.apply(Define(target, TARGET_FLOW))
    for execution in executions:
        session.apply(Start(execution, "f", None))


def _park(session: Session, execution: str) -> tuple[int, dict[str, Any]]:
    """The park's seq, and the echo of its digest an approval's payload carries (ADR 0117 D1), if any."""
    park = park_seq(session.read_log(execution)) or 1
    state = session.read_state(execution)
    digest = (state.get("suspendedOn") or {}).get("viewDigest")
    return park, ({"viewDigest": str(digest)} if digest is not None else {})


def _send(session: Session, execution: str, event: dict[str, Any]) -> Step:
    options = {k: event[k] for k in ("proof", "discardLegacyAnswers") if k in event}
    return session.apply(Resume(execution, event.get("type"), event.get("payload"), options or None))


def _judge(session: Session, step: Step, label: str, must_refuse: bool, invariant: str = ID,
           checked: tuple[str, ...] = CHECKED, what: str = "a tampered approval") -> Iterator[Violation]:
    for v in check_step(step, session.trace, checked):
        yield Violation(v.invariant, f"{label}: {v.message}", v.events, v.roles, v.expected, v.execution)
    if must_refuse and step.outcome.ok:
        yield Violation(invariant, f"{label}: {what} was accepted (the log gained "
                                   f"{len(step.log_after) - len(step.log_before)} events).")
    if not must_refuse and not step.outcome.ok:
        yield Violation(invariant, f"{label}: the untampered approval was refused ({step.outcome.reason}: "
                                   f"{step.outcome.message[:80]}), so the refusals above prove nothing.")


def _run(session: Session, result: CorpusResult, invariant_ids: tuple[str, ...]) -> None:
    exp = session.trace.now + 3_600_000
    if ID in invariant_ids:
        for decision in DECISIONS:
            _tamper(session, result, decision, exp)
            if proofs.signs_itself(session.features):
                _own_bytes(session, result, decision, exp)
        _scenarios(session, result, exp)
    if BOUND in invariant_ids and "resume-as" in session.features:
        _rebound(session, result, exp)
        try:
            _re_created(session, result, exp)
        except Undeclared as undeclared:  # erase is feature "legacy-scan"
            result.skip(undeclared)


def _count(result: CorpusResult, category: str) -> None:
    result.cases += 1
    result.per_category[category] = result.per_category.get(category, 0) + 1


def _refused(session: Session, result: CorpusResult, step: Step, label: str, setup: list) -> None:
    found = list(_judge(session, step, label, must_refuse=True))
    if found and not result.violations:
        result.operations = setup + [step.op]  # the shortest script that shows it
    result.violations.extend(found)
    if step.outcome.ok:
        _setup(session, "x")  # the execution moved on: park it again for the next variant


def _own_bytes(session: Session, result: CorpusResult, decision: dict[str, Any], exp: int) -> None:
    """ADR 0117 D2, whatever the encoding: the kernel's own proof for this park, altered after
    signing, and proofs its own signer made for a claim this resume is not (another actor, with
    the principal the approval is sent by), are refused and append nothing."""
    _setup(session, "x")
    park, echo = _park(session, "x")
    payload = {**decision, **echo}
    own = session.sign(proofs.Claim("x", park, ACTOR, exp, GATE, payload).to_json())
    if own is None:
        result.violations.append(Violation(ID, f"the kernel's signer refused to sign {ACTOR}'s approval of "
                                               f"{show(payload, 60)} for x, park #{park}: nothing can be tampered with."))
        return
    setup = session.trace.operations[:3]
    for number, (category, altered) in enumerate(own_proof_mutations(own)):
        options = {"proof": altered}
        if proofs.signed_equivalent(session, GATE, payload, options, "x", park):
            continue  # an alteration the signed fields do not see (a kernel signing spec/signing.md's proofs)
        _count(result, category)
        step = session.apply(Resume("x", GATE, payload, options))
        _refused(session, result, step, f"{category}[{number}]", setup)
    claims = [("other-actor", proofs.Claim("x", park, OTHER[0], exp, GATE, payload), {"actor": ACTOR})]
    claims += [("unknown-actor", proofs.Claim("x", park, name, exp, GATE, payload), None) for name in STRANGERS]
    for category, claim, principal in claims:
        signed = session.sign(claim.to_json())
        if signed is None:
            continue  # its signer refuses an actor it holds no key for: nothing to send
        _count(result, category)
        options = {"proof": signed, **({"principal": principal} if principal else {})}
        step = session.apply(Resume("x", GATE, payload, options))
        _refused(session, result, step, category, setup)


def _tamper(session: Session, result: CorpusResult, decision: dict[str, Any], exp: int) -> None:
    _setup(session, "x")
    park, echo = _park(session, "x")
    event = {"type": GATE, "payload": {**decision, **echo}}
    own = proofs.signs_itself(session.features)
    # Remembered with its claim, so every tampering of the event keeps the proof a kernel signing its own made.
    proofs.sign(session, proofs.Claim("x", park, ACTOR, exp, GATE, event["payload"]), SECRET)
    for number, (category, tampered, context) in enumerate(tamperings(
            event, actor=ACTOR, secret=SECRET, exp=exp, execution_id="x", parked_at_sequence=park,
            other_actor=OTHER, now=session.trace.now)):
        if not isinstance(context, dict) or not isinstance(context.get("executionId"), str) \
                or type(context.get("parkedAtSequence")) is not int or context["parkedAtSequence"] < 1:
            continue  # a kernel always supplies the park: "no context" is the authenticator kit's case
        if own and category in PROOF_CATEGORIES:
            continue  # foreign bytes its verifier refuses trivially: _own_bytes alters its own
        if (context["executionId"], context["parkedAtSequence"]) != ("x", park):
            # Signed for another park, presented at this one (the same test, seen from the park).
            proof = proofs.sign(session, proofs.Claim(context["executionId"], context["parkedAtSequence"], ACTOR, exp,
                                                      GATE, tampered["payload"]), SECRET)
            tampered = {**tampered, "proof": proof}
        setup = session.trace.operations[:3]  # configure, define, start: refusals change nothing
        try:
            step = _send(session, "x", tampered)
        except Undeclared as undeclared:  # a tampering of the override (feature "legacy-scan")
            result.skip(undeclared)
            continue
        _count(result, category)
        _refused(session, result, step, f"{category}[{number}]", setup)


def _scenarios(session: Session, result: CorpusResult, exp: int) -> None:
    # A fork copies the parent's park but has its own id (ADR 0117 D2).
    _setup(session, "x", "x-fork")
    park, echo = _park(session, "x")
    payload = {**DECISION, **echo}
    proof = proofs.sign(session, proofs.Claim("x", park, ACTOR, exp, GATE, payload), SECRET)
    cases = [("fork", "x-fork", True), ("valid", "x", False),
             # the same signed approval, replayed at the second park of the same gate (a loop)
             ("later-park-replay", "x", True)]
    for category, execution, must_refuse in cases:
        _count(result, category)
        step = _send(session, execution, {"type": GATE, "payload": payload, "proof": proof})
        found = list(_judge(session, step, category, must_refuse))
        if found and not result.violations:
            result.operations = session.script()
        result.violations.extend(found)


# -- beyond ADR 0117 D2: spec/signing.md section 10 ----------------------------------------
def _bound_case(session: Session, result: CorpusResult, category: str, op: Resume | ResumeAs, must_refuse: bool,
                scripted: bool = True) -> Step:
    """One case of the extension, judged by what it is about. `scripted`: the session's script alone
    reproduces it (an erase is not a script operation)."""
    _count(result, category)
    step = session.apply(op)
    found = list(_judge(session, step, category, must_refuse, BOUND, BOUND_CHECKED,
                        "an approval signed for another operation or incarnation"))
    if found and BOUND not in result.scripts:
        result.scripts[BOUND] = session.trace.operations if scripted else []
    result.violations.extend(found)
    return step


def _parked_for_resume_as(session: Session) -> tuple[int, dict[str, Any]]:
    _setup(session, "x", targets=(TARGET, ELSEWHERE))
    park, echo = _park(session, "x")
    return park, {**DECISION, **echo}


def _rebound(session: Session, result: CorpusResult, exp: int) -> None:
    """The probe's case and its variants: what the approver saw was a plain resume of x; a resumeAs
    runs other code (or its own new version), perhaps on input a transform migrated."""
    transform = TRANSFORM if "state-migration" in session.features else None
    moves = [(TARGET, transform), ("f", None)]
    for target, state in moves:
        park, payload = _parked_for_resume_as(session)
        proof = proofs.sign(session, proofs.Claim("x", park, ACTOR, exp, GATE, payload), SECRET)
        options = {"proof": proof, **({"transformState": state} if state is not None else {})}
        _bound_case(session, result, "resume-proof-for-resume-as", ResumeAs("x", target, GATE, payload, options), True)
    moved = proofs.Operation(TARGET, transform)
    others: list[tuple[str, Any]] = []
    if proofs.BINDING in session.features:  # a resumeAs's approval elsewhere: only a binding format can tell
        others = [("resume-as-proof-for-resume", None), ("other-target-flow", proofs.Operation(ELSEWHERE, transform))]
        if transform is not None:
            others.append(("other-transform", proofs.Operation(TARGET, {"name": "wrap", "key": "other"})))
    for category, sent in [*others, ("valid-resume-as", moved)]:
        park, payload = _parked_for_resume_as(session)
        proof = proofs.sign(session, proofs.Claim("x", park, ACTOR, exp, GATE, payload, operation=moved), SECRET)
        if sent is None:
            op: Resume | ResumeAs = Resume("x", GATE, payload, {"proof": proof})
        else:
            options = {"proof": proof, **({"transformState": sent.transform} if sent.transform is not None else {})}
            op = ResumeAs("x", str(sent.flow), GATE, payload, options)
        _bound_case(session, result, category, op, category != "valid-resume-as")


def _re_created(session: Session, result: CorpusResult, exp: int) -> None:
    """x erased and started again: the same flow and input park at the same seq with the same digest,
    but it is not the execution whose park the approver saw. The approval made for the original (a
    kernel that signs its own signs it then) is refused; one made for the new execution is accepted."""
    _setup(session, "x")
    park, echo = _park(session, "x")
    payload = {**DECISION, **echo}
    proof = proofs.sign(session, proofs.Claim("x", park, ACTOR, exp, GATE, payload), SECRET)
    handed = proofs.for_kernel(session, GATE, payload, {"proof": proof}, "x")  # as the original was handed it
    session.erase("x")
    session.apply(Start("x", "f", None))
    _bound_case(session, result, "re-created-execution", Resume("x", GATE, payload, handed), True, scripted=False)
    if session.read_state("x").get("status") != "suspended":
        return  # accepted: the violation is recorded, and nothing is parked to approve again
    park, echo = _park(session, "x")
    payload = {**DECISION, **echo}
    fresh = proofs.sign(session, proofs.Claim("x", park, ACTOR, exp, GATE, payload,
                                              incarnation=proofs.incarnation(session.trace, "x")), SECRET)
    _bound_case(session, result, "valid-re-created", Resume("x", GATE, payload, {"proof": fresh}), False,
                scripted=False)
