"""ADR 0117: approvals bound to what the approver saw (the view digest), to one
park of one execution and to who approved (the signed authenticator); strict mode
that needs an authenticator. Timers (D5): properties/timers.py.

The oracle for signatures is contract/signing.py, written from spec/signing.md;
the oracle for digests is spec/canonical.py, with its published vectors."""

from __future__ import annotations

import re

from typing import Any, Iterator

from loomcheck.contract.proofs import binding_of
from loomcheck.contract.script import Configure, Resume, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.steps import fresh, logs_touched
from loomcheck.contract.jsonvalues import show
from loomcheck.contract.logview import (
    Moment,
    answers_gate,
    condition_of,
    final_moment,
    park_seq,
    timer_wake,
)
from loomcheck.properties.explain import refusal_argument
from loomcheck.properties.registry import Violation, predicate
from loomcheck.contract.signing import covers, rejection, weak
from loomcheck.spec.canonical import view_digest
from loomcheck.spec.names import APPROVAL_GRANTED, TIMER_FIRED
from loomcheck.spec.profiles import admissible_reasons
from loomcheck.spec.programs import FlowProgram, SleepOp, SuspendOp
from loomcheck.spec.vocabulary import kernel_event_types

SUSPENDED = "EXECUTION_SUSPENDED"


# -- helpers -----------------------------------------------------------------------
def moment_before(step: Step, trace: Trace) -> Moment:
    """Where the step's execution stood before it: its log (or retained snapshot) folded."""
    return final_moment(step.log_before, trace.snapshots.get(step.execution or ""))


def approval_moment(step: Step, trace: Trace) -> Moment | None:
    """The moment before a resume (or resumeAs) that names the parked gate, not as the
    timer's wake: the resumes an approver sends. None for anything else."""
    op = step.op
    if not isinstance(op, (Resume, ResumeAs)) or op.type in kernel_event_types():
        return None
    if not (step.log_before or (step.execution or "") in trace.snapshots):
        return None
    before = moment_before(step, trace)
    if not answers_gate(before, op.type) or timer_wake(before, op.type):
        return None
    return before


def _park(step: Step, role: str) -> tuple[int | None, str]:
    """The EXECUTION_SUSPENDED the resume answers, for an explanation (properties/explain.py)."""
    return park_seq(step.log_before), role


def _echoes(before: Moment, payload: Any) -> bool:
    digest = (before.condition or {}).get("viewDigest")
    echoed = payload.get("viewDigest") if isinstance(payload, dict) else None
    return digest is None or (type(echoed) is str and echoed == digest)


def authenticated(step: Step, trace: Trace, before: Moment) -> bool:
    """The resume reaches the authenticator: its gate is covered and its digest echoes."""
    return covers(trace.security, step.op.type) and _echoes(before, step.op.payload)


def verdicts(step: Step, trace: Trace, parked_at: int) -> tuple[str | None, str | None]:
    """Why a conforming authenticator must reject the resume (None: it must grant it): verified
    for the operation the step performs at the execution the kernel holds now (spec/signing.md
    section 10), and with ADR 0117 D2's fields alone. They differ only for a proof signed for a
    plain resume of an execution never erased, sent with a resumeAs or to the execution
    re-created under its id: D2 grants it, the extension refuses it (approvals.operation-bound)."""
    op = step.op
    bound = binding_of(trace, op)
    strict = rejection(trace.security, trace.now, op.type, op.payload, op.options, op.execution, parked_at, bound)
    if not bound or strict is None:
        return strict, strict
    return strict, rejection(trace.security, trace.now, op.type, op.payload, op.options, op.execution, parked_at)


def _judged(step: Step, trace: Trace) -> tuple[int, str | None, str | None] | None:
    """For an authenticated answer to a park still in the log: the park's sequence and both
    verdicts (_verdicts); None when there is no proof to judge (retention removed the park:
    approvals.park-located judges that)."""
    before = approval_moment(step, trace)
    if before is None or not authenticated(step, trace, before):
        return None
    parked_at = park_seq(step.log_before)
    if parked_at is None:
        return None
    return (parked_at, *verdicts(step, trace, parked_at))


def reused(strict: str | None, plain: str | None) -> bool:
    """A plain resume's proof presented for another operation or incarnation: the extension's question."""
    return strict is not None and plain is None


def _declared(program: FlowProgram, on: str) -> list[SuspendOp | SleepOp]:
    return [op for op in program.suspend_points()
            if (isinstance(op, SleepOp) and on == TIMER_FIRED) or (isinstance(op, SuspendOp) and op.on == on)]


def _digest_shape(declared: list[SuspendOp | SleepOp], recorded: Any) -> bool:
    """ADR 0117 D1 decides: a view's gate records "v2:" and a SHA-256 (over the kernel's
    canonical JSON, whose bytes are a profile choice); a declared digest verbatim; else none."""
    for op in declared:
        if isinstance(op, SuspendOp) and op.has_view():
            if type(recorded) is str and V2_DIGEST.fullmatch(recorded):
                return True
        elif (op.viewDigest if isinstance(op, SuspendOp) else None) == recorded:
            return True
    return False


V2_DIGEST = re.compile(r"v2:[0-9a-f]{64}")


def _parks(step: Step, trace: Trace) -> Iterator[tuple[dict, dict, list[SuspendOp | SleepOp]]]:
    """Each gate park the step appended, its condition, and the suspend points it may be."""
    for execution, before, after in logs_touched(step):
        program = trace.flow_of(after, execution)
        if program is None:
            continue
        for event in after[len(before):]:
            if event.get("type") != SUSPENDED:
                continue
            condition = condition_of(event)
            if "stepId" in condition:  # a human step's or an in-doubt park: no proposal of its own
                yield event, condition, []
            else:
                declared = _declared(program, str(condition.get("on")))
                if declared:
                    yield event, condition, declared


# -- D1: the view digest -------------------------------------------------------------
@predicate("approvals.digest-recorded")
def parks_record_the_declared_digest(step: Step, trace: Trace) -> Iterator[Violation]:
    for event, condition, declared in _parks(step, trace):
        recorded = condition.get("viewDigest")
        if (not declared and recorded is not None) or (declared and not _digest_shape(declared, recorded)):
            want = " or ".join(sorted({"v2: + a SHA-256 of the view (64 hex digits)" if isinstance(op, SuspendOp)
                                       and op.has_view() else show(getattr(op, "viewDigest", None))
                                       for op in declared})) or "none"
            yield Violation("approvals.digest-recorded",
                            f"#{event['seq']} parked on {condition.get('on')!r} with viewDigest {show(recorded)}; the "
                            f"gate declares {want}.", (event["seq"],))
            return


@predicate("approvals.digest-bytes")
def digests_hash_loomcheck_canonical_json(step: Step, trace: Trace) -> Iterator[Violation]:
    """Profile canonical-json: the kernel's canonical JSON is spec/canonical-json.md's bytes."""
    for event, condition, declared in _parks(step, trace):
        views = [op for op in declared if isinstance(op, SuspendOp) and op.has_view()]
        recorded = condition.get("viewDigest")
        if views and _digest_shape(views, recorded) and recorded not in {view_digest(op.view) for op in views}:
            want = " or ".join(sorted(view_digest(op.view) for op in views))
            yield Violation("approvals.digest-bytes",
                            f"#{event['seq']} parked on {condition.get('on')!r} with viewDigest {show(recorded)}; "
                            f"loomcheck's canonical JSON of the view (spec/canonical-json.md) digests to {want}.",
                            (event["seq"],))
            return


@predicate("approvals.digest-echoed")
def resumes_echo_the_digest(step: Step, trace: Trace) -> Iterator[Violation]:
    before = approval_moment(step, trace)
    if before is None:
        return
    digest = (before.condition or {}).get("viewDigest")
    if _echoes(before, step.op.payload):
        if step.outcome.reason == "view-digest-mismatch":
            what = f"echoes {digest!r} exactly" if digest is not None else "answers a gate that declares no viewDigest"
            yield Violation("approvals.digest-echoed", f"resume {step.op.type!r} {what}, yet it was refused "
                                                       f"view-digest-mismatch.")
        return
    allowed = ("view-digest-mismatch", "unknown-flow") if isinstance(step.op, ResumeAs) else ("view-digest-mismatch",)
    if step.outcome.reason not in allowed:
        echoed = step.op.payload.get("viewDigest") if isinstance(step.op.payload, dict) else None
        yield Violation("approvals.digest-echoed",
                        f"the gate {step.op.type!r} parked with viewDigest {digest!r}; the resume echoed "
                        f"{show(echoed, 30)} and got {step.outcome.short()}, not refused view-digest-mismatch "
                        f"before the append (ADR 0117 D1).",
                        **refusal_argument(step.op.op, _park(step, "the park whose proposal the approver had to echo"),
                                           [e.get("seq") for e in fresh(step)],
                                           "ResumeRefusedError view-digest-mismatch: an answer must echo the viewDigest "
                                           "of the proposal its gate parked on"))


# -- D2: the signed authenticator ----------------------------------------------------
@predicate("approvals.signature-bound")
def approvals_hold_for_one_park(step: Step, trace: Trace) -> Iterator[Violation]:
    judged = _judged(step, trace)
    if judged is None:
        return
    parked_at, why, plain = judged
    op = step.op
    if reused(why, plain):
        return  # ADR 0117 D2 grants it, loomcheck's extension refuses it: approvals.operation-bound judges that
    if why is not None and step.outcome.reason != "unauthenticated":
        yield Violation("approvals.signature-bound",
                        f"the approval of {op.type!r} must be rejected ({why}: the proof is checked for execution "
                        f"{op.execution!r}, park #{parked_at}, clock {trace.now}), yet it got {step.outcome.short()}, "
                        f"not refused unauthenticated.",
                        **refusal_argument(op.op, _park(step, "the park the approval must be bound to"),
                                           [e.get("seq") for e in fresh(step)],
                                           f"ResumeRefusedError unauthenticated: {why}"))
    elif why is None and step.outcome.reason == "unauthenticated":
        yield Violation("approvals.signature-bound",
                        f"the approval of {op.type!r} carries a valid proof by {op.options['proof']['actor']!r} for "
                        f"execution {op.execution!r}, park #{parked_at}, yet it was refused unauthenticated "
                        f"({step.outcome.message[:80]}).")


@predicate("approvals.operation-bound")
def approvals_answer_one_operation(step: Step, trace: Trace) -> Iterator[Violation]:
    """Beyond ADR 0117 D2 (spec/signing.md section 10, profile choice operation-binding)."""
    judged = _judged(step, trace)
    if judged is None:
        return
    parked_at, strict, plain = judged
    allowed = ("unauthenticated", "unknown-flow") if isinstance(step.op, ResumeAs) else ("unauthenticated",)
    if not reused(strict, plain) or step.outcome.reason in allowed:
        return
    op = step.op
    erased = trace.erasures.get(op.execution, 0)
    signed = (f"{op.execution} before it was erased and re-created ({erased} erasure{'s' if erased > 1 else ''})"
              if erased else f"a plain resume of {op.execution}")
    sent = f"resumeAs onto {op.flow!r}" if isinstance(op, ResumeAs) else "resume"
    if isinstance(op, ResumeAs) and (op.options or {}).get("transformState") is not None:
        sent += f" with transformState {show(op.options['transformState'], 40)}"
    yield Violation("approvals.operation-bound",
                    f"a proof by {op.options['proof'].get('actor')!r} signed for {signed}, park #{parked_at}, was "
                    f"presented with a {sent} and got {step.outcome.short()}, not refused unauthenticated: what the "
                    f"approver saw was not this operation (spec/signing.md section 10, beyond ADR 0117 D2).",
                    **refusal_argument(op.op, _park(step, "the park the approver signed a plain resume of"),
                                       [e.get("seq") for e in fresh(step)],
                                       "ResumeRefusedError unauthenticated: the proof is bound to another operation "
                                       "or incarnation"))


@predicate("approvals.granted-evidence")
def grants_record_who_approved(step: Step, trace: Trace) -> Iterator[Violation]:
    before = approval_moment(step, trace) if step.outcome.ok else None
    expected_actor = None
    if before is not None and covers(trace.security, step.op.type):
        proof = (step.op.options or {}).get("proof")
        expected_actor = proof.get("actor") if isinstance(proof, dict) else None
    for execution, old, new in logs_touched(step):
        added = new[len(old):]
        grants = [e for e in added if e.get("type") == APPROVAL_GRANTED]
        if expected_actor is None or execution != step.execution:
            if grants:
                yield Violation("approvals.granted-evidence",
                                f"#{grants[0].get('seq')} APPROVAL_GRANTED {show(grants[0].get('payload'), 50)} was "
                                f"recorded by {step.op.op}, which no authenticator granted.", (grants[0].get("seq"),))
                return
            continue
        payload = grants[0].get("payload") if len(grants) == 1 else None
        typed = next((e for e in added if e.get("type") == step.op.type), None)
        good = (isinstance(payload, dict) and payload.get("actor") == expected_actor
                and isinstance(payload.get("verifiedBy"), str) and payload["verifiedBy"] != ""
                and typed is not None)  # before or after the resume-typed event (profile: approval-position)
        if not good:
            shown = ", ".join(f"#{e.get('seq')} {e.get('type')} {show(e.get('payload'), 40)}" for e in added[:4])
            yield Violation("approvals.granted-evidence",
                            f"the approval of {step.op.type!r} by {expected_actor!r} was accepted; it must record "
                            f"APPROVAL_GRANTED {{actor: {expected_actor!r}, verifiedBy}} beside the answer, and the log "
                            f"recorded {shown or 'nothing'}.", tuple(e.get("seq") for e in added[:4]))
            return


@predicate("approvals.weak-secret")
def weak_secrets_are_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Configure):
        return
    spec = step.op.config.get("authenticator")
    if not isinstance(spec, dict):
        return
    if weak(spec.get("keys")) and step.outcome.reason != "weak-secret":
        yield Violation("approvals.weak-secret",
                        f"an authenticator with a key under 16 bytes ({show(spec.get('keys'), 60)}) got "
                        f"{step.outcome.short()}, not refused weak-secret (ADR 0117 D2).")
    elif not weak(spec.get("keys")) and step.outcome.reason == "weak-secret":
        yield Violation("approvals.weak-secret", f"every key is 16 bytes or longer ({show(spec.get('keys'), 60)}), "
                                                 f"yet the configuration was refused weak-secret.")


@predicate("approvals.strict-needs-authenticator")
def strict_needs_an_authenticator(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Configure) or step.op.config.get("strict") is not True:
        return
    if step.op.config.get("authenticator") is not None:
        return
    acknowledged = step.op.config.get("requireResumeAuthenticator") is False
    if not acknowledged and step.outcome.reason != "strict-needs-authenticator":
        yield Violation("approvals.strict-needs-authenticator",
                        f"strict without an authenticator, unacknowledged, got {step.outcome.short()}, not refused "
                        f"strict-needs-authenticator (ADR 0117 D3).")
    elif acknowledged and not step.outcome.ok:
        yield Violation("approvals.strict-needs-authenticator",
                        f"strict with requireResumeAuthenticator: false acknowledges the missing authenticator, yet "
                        f"the configuration was refused {step.outcome.reason}.")


# -- Round 2: locating the park ------------------------------------------------------
@predicate("approvals.park-located", on_load=True)
def the_park_is_located(step: Step, trace: Trace) -> Iterator[Violation]:
    if "security" in trace.features and (step.state_after or {}).get("status") == "suspended":
        expected = park_seq(step.log_after)
        if step.parked_at != expected:
            tip = (step.log_after[-1].get("seq") if step.log_after else None)
            yield Violation("approvals.park-located",
                            f"{step.execution} is parked at #{expected} (its newest EXECUTION_SUSPENDED), but the kernel "
                            f"reports parkedAtSequence {step.parked_at}" + (" — the tip, not the park" if step.parked_at == tip
                                                                            else "") + ".", (expected,) if expected else ())
            return
    before = approval_moment(step, trace)
    if before is None or not authenticated(step, trace, before) or park_seq(step.log_before) is not None:
        return
    # Round 2 decides the refusal; its reason may be park-not-located or, as an authenticator
    # handed no park gives it, unauthenticated (spec/profiles.toml, park-gone-reason).
    if step.outcome.ok or step.outcome.reason not in admissible_reasons("resume", "park-not-located", "park-gone"):
        yield Violation("approvals.park-located",
                        f"{step.execution}'s EXECUTION_SUSPENDED is no longer in its log, so the approval of "
                        f"{step.op.type!r} cannot be bound to its park; it got {step.outcome.short()}, not refused "
                        f"park-not-located or unauthenticated (the tip is never bound).")
