"""ADR 0077: a declared resume shape is parsed after identity and before the
append; the parsed value is recorded; undeclared gates are unchanged; resumeAs
parses against the target flow; an imported log is not parsed again."""

from __future__ import annotations

from typing import Any, Iterator

from loomcheck.contract.script import Load, Resume, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.steps import fresh
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import (BINDING_REFUSALS, IN_DOUBT, answers_gate, code_changed, final_moment, flow_id_of,
                                          park_seq, timer_wake, without_grant)
from loomcheck.properties.approvals import approval_moment, authenticated, reused, verdicts
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.names import STATE_MIGRATION_ERROR
from loomcheck.spec.observables import observed
from loomcheck.spec.parsing import Invalid, parse
from loomcheck.spec.vocabulary import kernel_event_types


def answer_expected(step: Step, trace: Trace) -> tuple[Any, dict | None] | None:
    """For a resume that reaches the parked gate it names: (what must be recorded,
    the schema that decided it) — or None when no answer is due. The schema is the
    flow's own for resume, the TARGET flow's for resumeAs (ADR 0077 D4)."""
    op = step.op
    if not isinstance(op, (Resume, ResumeAs)) or op.type in kernel_event_types():
        return None
    snapshot = trace.snapshots.get(op.execution)
    if not (step.log_before or snapshot):
        return None
    before = final_moment(step.log_before, snapshot)
    if isinstance(op, Resume) and code_changed(trace.registered, step.log_before, snapshot):
        return None  # refused code-mismatch before the shape is looked at (version.pinned judges it)
    if not answers_gate(before, op.type) or timer_wake(before, op.type):
        return None  # a timer's wake is normalised, not parsed (approvals.timer-normalised judges it)
    flow_id = op.flow if isinstance(op, ResumeAs) else flow_id_of(step.log_before, snapshot)
    flow = trace.flows.get(flow_id or "")
    if flow is None:
        return None
    schema = flow.resume_schema(op.type)
    if schema is None:
        return op.payload, None
    parsed = parse(schema, op.payload)
    return (parsed, schema)


def answer_to_record(step: Step, trace: Trace) -> Any:
    """The value a conforming kernel records for this resume's answer: the parsed
    value where a schema is declared (ADR 0077), else the payload as sent."""
    before = final_moment(step.log_before, trace.snapshots.get(step.op.execution))
    if timer_wake(before, step.op.type):
        return {"wakeAt": (before.condition or {}).get("wakeAt")}  # ADR 0117 D5
    due = answer_expected(step, trace)
    if due is not None and due[1] is not None and not isinstance(due[0], Invalid):
        return due[0].value
    return step.op.payload


def _recorded_answer(step: Step) -> tuple[dict | None, dict | None]:
    """(the resume-typed event, EXECUTION_RESUMED) this resume appended."""
    added = without_grant(fresh(step))
    if isinstance(step.op, ResumeAs):
        added = added[1:]
    typed = added[0] if added else None
    resumed = next((e for e in added[1:3] if e.get("type") == "EXECUTION_RESUMED"), None)
    return typed, resumed


REFUSAL, RECORD = "refusal", "record"  # ADR 0077's two rules: refused at the door; the parsed value recorded


def parse_violations(step: Step, trace: Trace, invariant: str,
                     parts: tuple[str, ...] = (REFUSAL, RECORD)) -> Iterator[Violation]:
    expected = answer_expected(step, trace)
    if expected is None or expected[1] is None:
        return
    parsed, schema = expected
    if step.outcome.reason in BINDING_REFUSALS:
        return  # refused before the shape was looked at: approvals.* judge these
    if step.outcome.error == STATE_MIGRATION_ERROR:
        return  # the migration's own checks come after the shape (ADR 0056): migration.* judge these
    if isinstance(parsed, Invalid):
        if REFUSAL not in parts:
            return
        if step.outcome.reason != "invalid-payload":
            yield Violation(invariant, f"{show(step.op.payload, 50)} does not match the declared schema at {parsed.field} "
                                       f"({parsed.message}), and the resume got {step.outcome.short()}, not refused "
                                       f"invalid-payload before the append.", tuple(e.get("seq") for e in fresh(step)[:3]))
        elif parsed.field != "(root)" and parsed.field.split("/")[0] not in step.outcome.message:
            yield Violation(invariant, f"the refusal of {show(step.op.payload, 50)} does not name the offending field "
                                       f"{parsed.field!r}: {step.outcome.message!r}.")
        return
    if not step.outcome.ok:
        if REFUSAL in parts:
            yield Violation(invariant, f"{show(step.op.payload, 50)} matches the declared schema, yet the resume was "
                                       f"refused ({step.outcome.reason}: {step.outcome.message[:80]}).")
        return
    if RECORD not in parts or (step.log_before and final_moment(step.log_before).parked_on == IN_DOUBT):
        return
    typed, resumed = _recorded_answer(step)
    for event in (typed, resumed):
        if event is None or not json_equal(event.get("payload"), parsed.value):
            got = show(event.get("payload"), 50) if event else "nothing"
            yield Violation(invariant, f"the parsed answer is {show(parsed.value, 50)} (the payload sent was "
                                       f"{show(step.op.payload, 50)}), but #{event.get('seq') if event else '?'} recorded "
                                       f"{got}: the PARSED value is what is recorded (ADR 0077).",
                            (event.get("seq"),) if event else ())
            return


@predicate("typed.invalid-payload-refused")
def malformed_answers_are_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    if isinstance(step.op, Resume):
        yield from parse_violations(step, trace, "typed.invalid-payload-refused", (REFUSAL,))


@predicate("typed.parsed-value-recorded")
def parsed_answers_are_recorded(step: Step, trace: Trace) -> Iterator[Violation]:
    if isinstance(step.op, Resume):
        yield from parse_violations(step, trace, "typed.parsed-value-recorded", (RECORD,))


@predicate("typed.resume-as-target-schema")
def resume_as_parses_against_target(step: Step, trace: Trace) -> Iterator[Violation]:
    if isinstance(step.op, ResumeAs):
        yield from parse_violations(step, trace, "typed.resume-as-target-schema")


@predicate("typed.undeclared-unchanged")
def undeclared_answers_are_recorded_as_sent(step: Step, trace: Trace) -> Iterator[Violation]:
    expected = answer_expected(step, trace)
    if expected is None or expected[1] is not None or not step.outcome.ok:
        return
    if final_moment(step.log_before, trace.snapshots.get(step.op.execution)).parked_on == IN_DOUBT:
        return
    typed, resumed = _recorded_answer(step)
    for event in (typed, resumed):
        if event is not None and not json_equal(event.get("payload"), step.op.payload):
            yield Violation("typed.undeclared-unchanged",
                            f"{step.op.type!r} declares no schema, yet #{event['seq']} recorded {show(event.get('payload'), 50)} "
                            f"for the payload {show(step.op.payload, 50)}.", (event["seq"],))
            return


@predicate("typed.sharp-edge")
def closed_schemas_drop_undeclared_keys(step: Step, trace: Trace) -> Iterator[Violation]:
    yield from parse_violations(step, trace, "typed.sharp-edge")


# -- D3: identity before shape, judged with the authenticator's verdicts (ADR 0117) ---------
@predicate("typed.identity-before-shape")
def identity_before_shape(step: Step, trace: Trace) -> Iterator[Violation]:
    before = approval_moment(step, trace)
    if before is None or not authenticated(step, trace, before) or step.outcome.reason != "invalid-payload":
        return
    parked_at = park_seq(step.log_before)
    op = step.op
    why, plain = verdicts(step, trace, parked_at) if parked_at is not None else ("park-not-located",) * 2
    if why is not None and not reused(why, plain):
        yield Violation("typed.identity-before-shape",
                        f"the approval of {op.type!r} is not authenticated ({why}), yet it was refused invalid-payload "
                        f"({step.outcome.message[:60]}): the error told an unauthenticated caller the gate's contract.",
                        (parked_at,) if parked_at is not None else (),
                        (f"the park on {op.type!r} the approval was addressed to; the approval failed its identity "
                         f"check ({why}) before its shape was looked at",),
                        "refused for its identity (unauthenticated) before its payload is parsed (ADR 0077 D3)")


# -- D5: rehydration re-parses nothing ---------------------------------------------------
@predicate("typed.rehydration-not-validated", on_load=True)
def imported_logs_are_kept_as_written(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Load) or not step.outcome.ok:
        return
    for given, stored in zip(step.op.events, step.log_after):
        # As observables (spec/observables.toml): an answer exactly as given, a kernel event by the
        # fields a decision defines; a field the kernel adds to its own events is not a re-parse.
        kind = given.get("type")
        if kind != stored.get("type") or not json_equal(observed(kind, given.get("payload")),
                                                        observed(kind, stored.get("payload"))):
            yield Violation("typed.rehydration-not-validated",
                            f"the imported #{stored.get('seq')} {given.get('type')} {show(given.get('payload'), 40)} was "
                            f"stored as {stored.get('type')} {show(stored.get('payload'), 40)}: rehydration must not "
                            f"re-parse what resume() already parsed (ADR 0077 D5).", (stored.get("seq"),))
            return
    if len(step.log_after) != len(step.op.events):
        yield Violation("typed.rehydration-not-validated",
                        f"{len(step.op.events)} events were imported and the log holds {len(step.log_after)}.")
