"""ADR 0104 D1, the emit guard: flow and effect code cannot write kernel state;
allowed kernel facts are validated; decisions cannot be forged or overwritten."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterator

from loomcheck.contract.script import Resume, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.steps import fresh
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import IN_DOUBT, Moment, walk
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.names import DISCARD_DECISION_PREFIX
from loomcheck.spec.programs import DecideOp, EmitOp, StepOp
from loomcheck.spec.vocabulary import kernel_event_types, vocabulary

EFFECT_ID = re.compile(r"effect:(.*?)#(\d+):(.*)", re.DOTALL)  # ADR 0104 D1: effect:<stepId>#<attempt>:<id>


def _emitted(step: Step, trace: Trace) -> list[tuple[str, Any, str | None]]:
    """(type, payload, effect step id or None) for every emit the flow can make."""
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None:
        return []
    found: list[tuple[str, Any, str | None]] = [(op.type, op.payload, None) for op in flow.body if isinstance(op, EmitOp)]
    for op in flow.calls():
        if isinstance(op, StepOp):
            found.extend((e.type, e.payload, op.id) for e in op.emits)
    return found


@predicate("emit.kernel-types-refused")
def kernel_types_stay_out(step: Step, trace: Trace) -> Iterator[Violation]:
    forbidden = kernel_event_types() - set(vocabulary().emit_guard.allowed)
    for kind, payload, scope in _emitted(step, trace):
        if kind not in forbidden:
            continue
        for event in fresh(step):
            if event.get("type") == kind and json_equal(event.get("payload"), payload):
                where = f"the effect of step {scope!r}" if scope else "flow code"
                yield Violation("emit.kernel-types-refused",
                                f"#{event['seq']} {kind} {show(payload, 40)} was emitted by {where} and appended: flow and "
                                f"effect code may not write a kernel type outside the allow-list (ADR 0104 D1).",
                                (event["seq"],))
                return


def _meter_problem(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return "not an object"
    for name, ceiling in vocabulary().emit_guard.meter_ceilings.items():
        if name in payload:
            value = payload[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"{name} is not a number"
            if not (isinstance(value, int) or math.isfinite(value)) or not 0 <= value <= ceiling:
                return f"{name}={value!r} is outside [0, {ceiling:g}]"
    return None


def _appended_invalid(step: Step, kind: str, problem_of: Callable[[Any], str | None],
                      invariant: str, rule: str) -> Iterator[Violation]:
    """The first fresh `kind` fact the guard should have refused (ADR 0104 D1)."""
    for event in fresh(step):
        if event.get("type") != kind:
            continue
        problem = problem_of(event.get("payload"))
        if problem:
            yield Violation(invariant,
                            f"#{event['seq']} {kind} {show(event.get('payload'), 40)} reached the log: {problem} "
                            f"(ADR 0104 D1).", (event["seq"],), ("the emitted fact the guard should have refused",),
                            f"{rule}: the emit appends nothing and fails the run (EXECUTION_FAILED)")
            return


@predicate("emit.meters-validated")
def meters_only_add(step: Step, trace: Trace) -> Iterator[Violation]:
    yield from _appended_invalid(step, "RESOURCE_METERED", _meter_problem, "emit.meters-validated",
                                 "ADR 0104 D1 refuses a meter field that is not a finite number in [0, ceiling] "
                                 "(invalid-meter)")


def _quota_problem(payload: Any) -> str | None:
    limit = vocabulary().emit_guard.quota_reason_max
    reason = payload.get("reason") if isinstance(payload, dict) else None
    if not isinstance(reason, str) or len(reason) > limit:
        return f"the reason must be a string of at most {limit} characters"
    return None


@predicate("emit.quota-reason-validated")
def quota_reasons_bounded(step: Step, trace: Trace) -> Iterator[Violation]:
    yield from _appended_invalid(step, "QUOTA_EXCEEDED", _quota_problem, "emit.quota-reason-validated",
                                 "ADR 0104 D1 refuses a QUOTA_EXCEEDED whose reason is not a string of at most "
                                 f"{vocabulary().emit_guard.quota_reason_max} characters (invalid-quota)")


@predicate("emit.audit-records-validated")
def audit_records_are_objects(step: Step, trace: Trace) -> Iterator[Violation]:
    audit = set(vocabulary().emit_guard.audit)
    for kind in sorted(audit):
        yield from _appended_invalid(step, kind, lambda p: None if isinstance(p, dict) else "an audit record is an object",
                                     "emit.audit-records-validated",
                                     "an audit list holds records: a non-object one is refused (invalid-emit)")
    yield from _audit_refused(step, trace, audit)


def _audit_refused(step: Step, trace: Trace, audit: set[str]) -> Iterator[Violation]:
    """A run the guard failed whose failing scope emits only application events and audit
    records: an allow-listed fact was refused (ADR 0104 D1)."""
    from loomcheck.properties.emitted import emit_failures, scope_emits

    program = trace.flow_of(step.log_after, step.execution)
    if program is None:
        return
    kernel = kernel_event_types()

    def admitted(kind: str, payload: Any, decide: bool) -> bool:
        if kind == "RESOURCE_METERED":
            return _meter_problem(payload) is None
        if kind == "QUOTA_EXCEEDED":
            return _quota_problem(payload) is None
        return (kind not in kernel and not decide) or (kind in audit and isinstance(payload, dict))

    for failure in emit_failures(fresh(step)):
        if failure.reason not in ("kernel-type", "invalid-emit"):  # a meter's or quota's refusal is theirs
            continue
        emits = scope_emits(program, failure.step_id)
        if all(admitted(*emit) for emit in emits) and any(kind in audit for kind, _, _ in emits):
            failed = next(e for e in fresh(step) if e.get("type") in ("STEP_FAILED", "EXECUTION_FAILED"))
            where = f"the effect of step {failure.step_id!r}" if failure.step_id else "flow code"
            yield Violation("emit.audit-records-validated",
                            f"#{failed['seq']} failed the run ({failure.reason}), but {where} emits only application "
                            f"events and audit records, which ADR 0104 D1's allow-list admits.", (failed["seq"],),
                            ("the guard's refusal of an allowed fact",),
                            "append the audit record and go on: SAFETY_BLOCKED, EGRESS_DENIED, EFFECT_DENIED and "
                            "OUTCOME_RECORDED are audit lists on the allow-list")
            return


def _is_kernel_record(event: dict, previous: dict | None, moment: Moment, step: Step, reserved: str) -> bool:
    """A reserved decision the kernel itself records (ADR 0104 D1, D2): the operator's verdict at
    an in-doubt park, just after the resume-typed event, or the legacy override a resume carried."""
    decision_id = event["payload"]["decisionId"]
    if not decision_id.startswith(reserved):
        return False
    if moment.parked_on == IN_DOUBT and previous is not None and previous.get("type") == IN_DOUBT:
        return True
    options = getattr(step.op, "options", None) or {}
    override = options.get("discardLegacyAnswers") if isinstance(options, dict) else None
    return (isinstance(step.op, (Resume, ResumeAs)) and isinstance(override, dict)
            and decision_id == f"{DISCARD_DECISION_PREFIX}:{override.get('stepId')}")


def _fresh_decisions(step: Step, trace: Trace) -> Iterator[tuple[dict, dict | None, Moment]]:
    """Each DECISION_RECORDED with a string id this operation appended, with the event before
    it and the moment before it."""
    first_new = len(step.log_before)
    previous: dict | None = None
    for position, (event, moment, _) in enumerate(walk(step.log_after, trace.snapshots.get(step.execution or ""))):
        payload = event.get("payload")
        if (position >= first_new and event.get("type") == "DECISION_RECORDED" and isinstance(payload, dict)
                and isinstance(payload.get("decisionId"), str)):
            yield event, previous, moment
        previous = event


@predicate("emit.reserved-decision-ids")
def reserved_ids_stay_the_kernels(step: Step, trace: Trace) -> Iterator[Violation]:
    reserved = vocabulary().emit_guard.reserved_decision_prefix
    for event, previous, moment in _fresh_decisions(step, trace):
        decision_id = event["payload"]["decisionId"]
        scoped = EFFECT_ID.fullmatch(decision_id)
        given = scoped.group(3) if scoped else decision_id
        if given.startswith(reserved) and not _is_kernel_record(event, previous, moment, step, reserved):
            how = f"rewritten into step {scoped.group(1)!r}'s namespace" if scoped else "outside the kernel's own records"
            yield Violation("emit.reserved-decision-ids",
                            f"#{event['seq']} recorded the reserved decision id {given!r} {how}: ids beginning "
                            f"{reserved} are the kernel's own records, and flow or effect code that emits one (or "
                            f"passes one to ctx.decide) is refused.", (event["seq"],),
                            ("a reserved decision that flow or effect code wrote",),
                            "the emit (or ctx.decide) is refused reserved-decision-id: it appends nothing and fails "
                            "the run")
            return


# What ends an effect's run inside one operation: its step's own end, or the run's.
_EFFECT_ENDS = ("STEP_COMPLETED", "STEP_FAILED", "EFFECT_INDOUBT", "EXECUTION_SUSPENDED", "EXECUTION_COMPLETED",
                "EXECUTION_FAILED", "EXECUTION_RECOVERED", "EXECUTION_RESUMED", "EXECUTION_MIGRATED")


def _inside_effects(events: list[dict], emitted: dict[str, set[str]]) -> Iterator[tuple[dict, str]]:
    """(DECISION_RECORDED, step) for each decision appended while a step that emits its id ran."""
    running: set[str] = set()
    for event in events:
        kind = event.get("type")
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        if kind == "STEP_STARTED" and payload.get("stepId") in emitted:
            running.add(payload["stepId"])
        elif kind in ("STEP_COMPLETED", "STEP_FAILED") and payload.get("stepId") in running:
            running.discard(payload["stepId"])
        elif kind in _EFFECT_ENDS:
            running.clear()
        elif kind == "DECISION_RECORDED":
            for step_id in sorted(running):
                if payload.get("decisionId") in emitted[step_id]:
                    yield event, step_id


@predicate("emit.effect-decisions-scoped")
def effect_decisions_are_scoped(step: Step, trace: Trace) -> Iterator[Violation]:
    reserved = vocabulary().emit_guard.reserved_decision_prefix
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None:
        return
    flow_ids = {op.id for op in flow.body if isinstance(op, DecideOp)}
    flow_ids |= {op.payload.get("decisionId") for op in flow.body
                 if isinstance(op, EmitOp) and op.type == "DECISION_RECORDED" and isinstance(op.payload, dict)}
    # A reserved id an effect emits must be refused: emit.reserved-decision-ids judges that,
    # and the kernel's own verdict under the same id, recorded later, is not the effect's.
    emitted: dict[str, set[str]] = {}
    for kind, p, scope in _emitted(step, trace):
        if (scope is not None and kind == "DECISION_RECORDED" and isinstance(p, dict)
                and isinstance(p.get("decisionId"), str) and not p["decisionId"].startswith(reserved)):
            emitted.setdefault(scope, set()).add(p["decisionId"])
    only_effects = set().union(*emitted.values()) - flow_ids if emitted else set()
    # An id the flow also writes is the effect's when appended while the effect ran.
    found = [(e, None) for e, _, _ in _fresh_decisions(step, trace) if e["payload"]["decisionId"] in only_effects]
    found += list(_inside_effects(fresh(step), emitted))
    if found:
        event, step_id = min(found, key=lambda f: f[0]["seq"])
        decision_id = event["payload"]["decisionId"]
        where = f" while the effect of step {step_id!r} ran" if step_id else ""
        yield Violation("emit.effect-decisions-scoped",
                        f"#{event['seq']} recorded an effect's decision{where} under the id the effect gave, "
                        f"{decision_id!r}, where the flow's own ctx.decide would read it.", (event["seq"],),
                        ("the effect's decision, not rewritten",),
                        f"record it as effect:<stepId>#<attempt>:{decision_id}")


@predicate("emit.decisions-never-overwritten")
def decisions_never_overwritten(step: Step, trace: Trace) -> Iterator[Violation]:
    first_new = len(step.log_before)
    recorded: dict[str, tuple[int, Any]] = {}
    for position, event in enumerate(step.log_after):
        payload = event.get("payload")
        if event.get("type") != "DECISION_RECORDED" or not isinstance(payload, dict):
            continue
        decision_id = payload.get("decisionId")
        if not isinstance(decision_id, str):
            continue
        if decision_id in recorded and position >= first_new and not json_equal(recorded[decision_id][1],
                                                                                 payload.get("choice")):
            yield Violation("emit.decisions-never-overwritten",
                            f"decision {decision_id!r} was recorded at #{recorded[decision_id][0]} with "
                            f"{show(recorded[decision_id][1], 30)} and again at #{event['seq']} with "
                            f"{show(payload.get('choice'), 30)}: a decision is never overwritten.",
                            (recorded[decision_id][0], event["seq"]),
                            ("the decision as first recorded", "the same id recorded with another choice"),
                            "the second emit is refused decision-conflict: it appends nothing and fails the run")
            return
        recorded.setdefault(decision_id, (event["seq"], payload.get("choice")))
