"""What an emit-guard refusal leaves in a log (ADR 0104 D1), read from the log alone: the
emit predicates judge it and the coverage layer counts it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

JSON = Any


@cache
def _emit_reasons() -> frozenset[str]:
    """The refusal reasons the emit guard raises (spec/refusals.toml, error EmitRefusedError)."""
    from loomcheck.spec.vocabulary import refusals

    return frozenset(r.reason for r in refusals().refusal if r.error == "EmitRefusedError")


@dataclass(frozen=True)
class Failure:
    """A run the guard failed: the reason recorded, and the step whose effect emitted (None: flow code)."""

    reason: str
    step_id: str | None


def emit_failures(fresh: list[dict[str, JSON]]) -> list[Failure]:
    """Emit refusals as a run records them (ADR 0104 D1: the emit appends nothing and fails
    the run): an EXECUTION_FAILED, or the STEP_FAILED of the emitting step, whose error
    carries an EmitRefusedError reason from spec/refusals.toml."""
    reasons = _emit_reasons()
    found: list[Failure] = []
    for event in fresh:
        if event.get("type") not in ("STEP_FAILED", "EXECUTION_FAILED"):
            continue
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        error = payload.get("error")
        if not isinstance(error, dict) or error.get("reason") not in reasons:
            continue
        if error.get("type") not in (None, "EmitRefusedError"):
            continue
        step_id = error.get("stepId", payload.get("stepId"))
        failure = Failure(str(error["reason"]), step_id if isinstance(step_id, str) else None)
        if failure not in found:
            found.append(failure)
    # The EXECUTION_FAILED after a STEP_FAILED may not name the step: one failure, with its step.
    scoped = {f.reason for f in found if f.step_id is not None}
    return [f for f in found if f.step_id is not None or f.reason not in scoped]


def scope_emits(program: Any, step_id: str | None) -> list[tuple[str, JSON, bool]]:
    """(type, payload, from ctx.decide) for every emit of the failing scope, in order."""
    from loomcheck.spec.programs import DecideOp, EmitOp, StepOp

    if step_id is not None:
        return [(e.type, e.payload, False) for op in program.calls()
                if isinstance(op, StepOp) and op.id == step_id for e in op.emits]
    found: list[tuple[str, JSON, bool]] = []
    for op in program.body:
        if isinstance(op, EmitOp):
            found.append((op.type, op.payload, False))
        elif isinstance(op, DecideOp):
            found.append(("DECISION_RECORDED", {"decisionId": op.id, "choice": op.choice}, True))
    return found


def plain_json(value: JSON) -> bool:
    """A value every store holds: JSON text that is valid UTF-8 (no lone surrogate), no NaN."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, TypeError, RecursionError):
        return False
    return True
