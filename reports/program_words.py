"""A flow program (spec/programs.py) in words, one line per call, its suspend points numbered
as ADR 0057 counts them (gate #i receives answer entry i): what a reader of a counterexample
needs to know about the flow the executions run."""

from __future__ import annotations

from itertools import count
from typing import Any, Iterator

from pydantic import ValidationError

from loomcheck.spec.programs import (CompleteOp, DecideOp, EmitOp, FlowProgram, InputOp, ObserveOp, ParallelOp,
                                     SleepOp, StepOp, SuspendOp, is_suspend_point)


def program_lines(program: dict[str, Any]) -> list[str] | None:
    """The program's calls in words; None for a program the flow language does not accept."""
    try:
        parsed = FlowProgram.model_validate(program)
    except (ValidationError, ValueError, RecursionError):
        return None
    gate = count()
    lines = []
    for op in parsed.body:
        if isinstance(op, ParallelOp):
            lines.append("in parallel: " + " | ".join(_call(branch, gate) for branch in op.branches))
        else:
            lines.append(_call(op, gate))
    typed = sorted((parsed.resumeSchemas or {}).keys())
    if typed:
        lines.append("typed answers: " + ", ".join(repr(t) for t in typed))
    if parsed.validateInput and parsed.inputSchema is not None:
        lines.insert(0, "input parsed by its schema")
    return lines


def _call(op: Any, gate: Iterator[int]) -> str:
    number = f"gate #{next(gate)} " if is_suspend_point(op) else ""
    if isinstance(op, SuspendOp):
        extra = [w for w, on in (("shows a view", op.has_view()), (f"times out after {op.timeout} ms", op.timeout))
                 if on]
        return f"{number}{op.on!r}" + (f" ({', '.join(extra)})" if extra else "")
    if isinstance(op, SleepOp):
        return f"{number}sleep {op.ms} ms"
    if isinstance(op, StepOp):
        return number + _step(op)
    if isinstance(op, InputOp):
        return "read the input"
    if isinstance(op, ObserveOp):
        return "observe what the gates passed with"
    if isinstance(op, EmitOp):
        return f"emit {op.type}"
    if isinstance(op, DecideOp):
        return f"decide {op.id!r}"
    if isinstance(op, CompleteOp):
        return "complete"
    return str(getattr(op, "op", op))


def _step(op: StepOp) -> str:
    if op.kind == "human":
        return f"human step {op.id!r} on {op.on!r}"
    words = [op.kind] if op.kind != "idempotent" else []
    if op.crash is not None:
        attempts = ", ".join(map(str, op.crash.attempts))
        words.append(f"crashes {op.crash.at.replace('-', ' ')} on attempt {attempts}")
    if op.emits:
        words.append("emits " + ", ".join(e.type for e in op.emits))
    return f"step {op.id!r}" + (f" ({'; '.join(words)})" if words else "")
