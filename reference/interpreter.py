"""The flow-program interpreter: walks a program's body, calling the context.
This is the generic runner another kernel writes in its own language."""

from __future__ import annotations

from dataclasses import dataclass

from loomcheck.reference.context import FlowContext
from loomcheck.reference.events import JSON
from loomcheck.spec.programs import OBSERVED_EVENT, CompleteOp, EmitOp, FlowProgram, ObserveOp, StepOp, SuspendOp


@dataclass(frozen=True)
class Completed:
    output: JSON


def run_program(program: FlowProgram, ctx: FlowContext) -> Completed:
    """Run the body from the top. Raises Park when a gate has no answer left."""
    for op in program.body:
        if isinstance(op, StepOp):
            output = op.output
            ctx.step(op.id, lambda: output)
        elif isinstance(op, SuspendOp):
            ctx.suspend(op.on)
        elif isinstance(op, ObserveOp):
            gate = ctx.last_gate
            index, on, value = gate if gate is not None else (None, None, None)
            ctx.emit(OBSERVED_EVENT, {"gate": index, "on": on, "value": value})
        elif isinstance(op, EmitOp):
            ctx.emit(op.type, op.payload)
        elif isinstance(op, CompleteOp):
            return Completed(op.output)
    return Completed(None)
