"""The emit guard (ADR 0104, decision D1): flow and effect code cannot write kernel state.

`guard(event_type, payload, decisions, scope)` returns the (type, payload) to
append, or raises EmitRefusedError with a reason from spec/refusals.toml.
The payload is copied to plain JSON first, so what is checked is what is
folded. The allow-list, the meter ceilings and the reason limit are data in
spec/events.toml ([emit_guard]); the validators are small pure functions."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

from loomcheck.reference.errors import EmitRefusedError
from loomcheck.reference.events import NotJson, to_plain_json
from loomcheck.spec.vocabulary import kernel_event_types, vocabulary

JSON = Any


@dataclass(frozen=True)
class EffectScope:
    """Where an effect-level emit comes from: its step and attempt."""

    step_id: str
    attempt: int


def meter_problem(payload: JSON, ceilings: Mapping[str, float]) -> str | None:
    """None when every meter field present is a finite number in [0, ceiling]."""
    if not isinstance(payload, dict):
        return "a meter is an object of numeric fields"
    for name, ceiling in ceilings.items():
        if name not in payload:
            continue
        value = payload[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} is not a number"
        try:
            number = float(value)
        except OverflowError:
            return f"{name} is out of range"
        if not math.isfinite(number) or number < 0 or number > ceiling:
            return f"{name}={value!r} is not a finite number in [0, {ceiling:g}]"
    return None


def quota_problem(payload: JSON, limit: int) -> str | None:
    if not isinstance(payload, dict) or not isinstance(payload.get("reason"), str):
        return "QUOTA_EXCEEDED needs a string reason"
    if len(payload["reason"]) > limit:
        return f"the reason has {len(payload['reason'])} characters; at most {limit}"
    return None


def _same(a: JSON, b: JSON) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def guard(event_type: str, payload: JSON, decisions: Mapping[str, JSON], scope: EffectScope | None) -> tuple[str, JSON]:
    try:
        plain = to_plain_json(payload)  # ADR 0104 D1: checked == folded, no getter can change it afterwards
    except NotJson as exc:
        raise EmitRefusedError("invalid-emit", f"the payload is not plain JSON: {exc}") from None
    if event_type not in kernel_event_types():
        return event_type, plain
    rules = vocabulary().emit_guard
    if event_type not in rules.allowed:  # ADR 0104 D1: every kernel type but the allow-list is refused
        raise EmitRefusedError("kernel-type", f"{event_type} is a kernel event type; flow and effect code may not write it")
    if event_type == "RESOURCE_METERED":  # ADR 0104 D1: each allowed type is validated too
        problem = meter_problem(plain, rules.meter_ceilings)
        if problem:
            raise EmitRefusedError("invalid-meter", problem)
    elif event_type == "QUOTA_EXCEEDED":
        problem = quota_problem(plain, rules.quota_reason_max)
        if problem:
            raise EmitRefusedError("invalid-quota", problem)
    elif event_type == "DECISION_RECORDED":
        plain = _decision(plain, decisions, scope, rules.reserved_decision_prefix)
    elif not isinstance(plain, dict):
        raise EmitRefusedError("invalid-emit", f"{event_type} is an audit record: an object")
    return event_type, plain


def _decision(payload: JSON, decisions: Mapping[str, JSON], scope: EffectScope | None, reserved: str) -> JSON:
    if not isinstance(payload, dict) or not isinstance(payload.get("decisionId"), str):
        raise EmitRefusedError("invalid-emit", "DECISION_RECORDED needs a string decisionId")
    decision_id = payload["decisionId"]
    if decision_id.startswith(reserved):  # ADR 0104 D1: __loom_ ids are the kernel's
        raise EmitRefusedError("reserved-decision-id", f"{decision_id!r}: ids beginning {reserved} are the kernel's")
    if scope is not None:
        # ADR 0104 D1: an effect can never pre-empt the flow's own ctx.decide; the attempt keeps a
        # crash re-run of the step from colliding with its crashed attempt.
        decision_id = f"effect:{scope.step_id}#{scope.attempt}:{decision_id}"
        payload = {**payload, "decisionId": decision_id}
    if decision_id in decisions and not _same(decisions[decision_id], payload.get("choice")):  # ADR 0104 D1
        raise EmitRefusedError("decision-conflict", f"{decision_id!r} is already recorded with another choice")
    return payload


def check_decide(decision_id: str) -> None:
    """ctx.decide refuses reserved ids before its replay lookup."""
    reserved = vocabulary().emit_guard.reserved_decision_prefix
    if decision_id.startswith(reserved):  # ADR 0104 D1: the verdict cannot be forged
        raise EmitRefusedError("reserved-decision-id", f"{decision_id!r}: ids beginning {reserved} are the kernel's")
