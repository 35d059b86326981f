"""The flow-program interpreter: walks a program's body, calling the context.
This is the generic runner another kernel writes in its own language."""

from __future__ import annotations

from dataclasses import dataclass

from loomcheck.reference.context import FlowContext, Park
from loomcheck.reference.events import JSON
from loomcheck.spec.programs import (
    CompleteOp,
    DecideOp,
    EmitOp,
    FlowProgram,
    InputOp,
    ObserveOp,
    ParallelOp,
    SleepOp,
    StepOp,
    SuspendOp,
)
from loomcheck.spec.names import INPUT_EVENT, OBSERVED_EVENT, TIMER_FIRED


@dataclass(frozen=True)
class Completed:
    output: JSON


def call(ctx: FlowContext, op: StepOp | SuspendOp | SleepOp) -> JSON:
    point = ctx.points.get(id(op))  # the suspend point's position in the program, for observe
    if isinstance(op, StepOp):
        return ctx.run(op) if op.kind != "human" else ctx.human(op, point)
    if isinstance(op, SleepOp):
        return ctx.suspend(TIMER_FIRED, None, point, timeout=op.ms)
    digest = ctx.digest_of(op.view) if op.has_view() else op.viewDigest  # ADR 0117 D1
    return ctx.suspend(op.on, op.meta, point, view_digest=digest, timeout=op.timeout)


def parallel(ctx: FlowContext, op: ParallelOp) -> list[JSON]:
    """Every branch is called in order (Promise.all). When several park, the
    recorded park is a human step's (thrown synchronously) before a suspend's
    (rejected a tick later), else the first called (ADR 0104 D1, parallel)."""
    results: list[JSON] = []
    parks: list[Park] = []
    for branch in op.branches:  # ADR 0104 D1: suspend points take answers in call order
        try:
            results.append(call(ctx, branch))
        except Park as park:
            parks.append(park)
    if parks:
        raise next((p for p in parks if p.human), parks[0])  # ADR 0104 D1: a human step's park first
    return results


def run_program(program: FlowProgram, ctx: FlowContext) -> Completed:
    """Run the body from the top. Raises Park when a suspend point has no answer left."""
    ctx.points = {id(op): index for index, op in enumerate(program.suspend_points())}
    for op in program.body:
        if isinstance(op, (StepOp, SuspendOp, SleepOp)):
            call(ctx, op)
        elif isinstance(op, ParallelOp):
            parallel(ctx, op)
        elif isinstance(op, ObserveOp):
            for passed in ctx.passed[ctx.observed:]:
                ctx.emit(OBSERVED_EVENT, {"gate": passed.index, "on": passed.on, "value": passed.value})
            ctx.observed = len(ctx.passed)
        elif isinstance(op, InputOp):
            ctx.emit(INPUT_EVENT, {"value": ctx.input})  # ADR 0056 D2: the input this run was handed
        elif isinstance(op, EmitOp):
            ctx.emit(op.type, op.payload)
        elif isinstance(op, DecideOp):
            ctx.decide(op.id, op.choice)
        elif isinstance(op, CompleteOp):
            return Completed(op.output)
    return Completed(None)
