"""ADR 0104 D1, the emit guard: flow and effect code cannot write kernel state;
allowed kernel facts are validated; decisions cannot be forged or overwritten."""

from __future__ import annotations

import math
from typing import Any, Iterator

from loomcheck.harness.session import Step, Trace
from loomcheck.properties.answers import fresh
from loomcheck.properties.jsonvalues import json_equal, show
from loomcheck.properties.logview import IN_DOUBT, walk
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.programs import DecideOp, EmitOp, StepOp
from loomcheck.spec.vocabulary import kernel_event_types, vocabulary


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


@predicate("emit.allowed-types-validated")
def allowed_facts_are_valid(step: Step, trace: Trace) -> Iterator[Violation]:
    rules = vocabulary().emit_guard
    for event in fresh(step):
        kind, payload = event.get("type"), event.get("payload")
        problem = None
        if kind == "RESOURCE_METERED":
            problem = _meter_problem(payload)
        elif kind == "QUOTA_EXCEEDED":
            reason = payload.get("reason") if isinstance(payload, dict) else None
            if not isinstance(reason, str) or len(reason) > rules.quota_reason_max:
                problem = f"the reason must be a string of at most {rules.quota_reason_max} characters"
        elif kind in rules.audit and not isinstance(payload, dict):
            problem = "an audit record is an object"
        if problem:
            yield Violation("emit.allowed-types-validated",
                            f"#{event['seq']} {kind} {show(payload, 40)} reached the log: {problem} (ADR 0104 D1).",
                            (event["seq"],))
            return


@predicate("emit.decisions-guarded")
def decisions_are_guarded(step: Step, trace: Trace) -> Iterator[Violation]:
    reserved = vocabulary().emit_guard.reserved_decision_prefix
    flow = trace.flow_of(step.log_after, step.execution)
    flow_ids = set()
    if flow is not None:
        flow_ids = {op.id for op in flow.body if isinstance(op, DecideOp)}
        flow_ids |= {op.payload.get("decisionId") for op in flow.body
                     if isinstance(op, EmitOp) and op.type == "DECISION_RECORDED" and isinstance(op.payload, dict)}
    effect_ids = {p.get("decisionId") for kind, p, scope in _emitted(step, trace)
                  if scope is not None and kind == "DECISION_RECORDED" and isinstance(p, dict)} - flow_ids
    first_new = len(step.log_before)
    recorded: dict[str, tuple[int, Any]] = {}
    previous: dict | None = None
    for position, (event, moment, _) in enumerate(walk(step.log_after, trace.snapshots.get(step.execution or ""))):
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        if event.get("type") == "DECISION_RECORDED" and isinstance(payload.get("decisionId"), str):
            decision_id = payload["decisionId"]
            if position >= first_new:
                kernel_verdict = (decision_id.startswith(reserved) and moment.parked_on == IN_DOUBT
                                  and previous is not None and previous.get("type") == IN_DOUBT)
                if decision_id.startswith(reserved) and not kernel_verdict:
                    yield Violation("emit.decisions-guarded",
                                    f"#{event['seq']} recorded the reserved decision id {decision_id!r} outside an operator's "
                                    f"verdict: ids beginning {reserved} are the kernel's own records.", (event["seq"],))
                    return
                if decision_id in effect_ids:
                    yield Violation("emit.decisions-guarded",
                                    f"#{event['seq']} recorded an effect's decision under the flow's own id {decision_id!r}; "
                                    f"it must be rewritten to effect:<stepId>#<attempt>:{decision_id}.", (event["seq"],))
                    return
            if decision_id in recorded and not json_equal(recorded[decision_id][1], payload.get("choice")):
                yield Violation("emit.decisions-guarded",
                                f"decision {decision_id!r} was recorded at #{recorded[decision_id][0]} with "
                                f"{show(recorded[decision_id][1], 30)} and again at #{event['seq']} with "
                                f"{show(payload.get('choice'), 30)}: a decision is never overwritten.",
                                (recorded[decision_id][0], event["seq"]))
                return
            recorded.setdefault(decision_id, (event["seq"], payload.get("choice")))
        previous = event
