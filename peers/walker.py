"""The generic flow body: one run of a flow program, from the top, inside a
peer's workflow, calling the peer's own primitives.

An adapter gives the walker a `Peer` (how to run a step, how to wait at a gate,
what the run's input is) and the walker does the rest: it walks the program's
ops in order, runs each `step` through the peer's step primitive with a body
that notes itself in the witness (witness.py), asks the peer's gate primitive
for each suspend point's answer, and writes `observe`, `input` and `emit` as
application events. Which steps run and which replay, and which answer each gate
receives, are the peer's decisions; the walker only reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from loomcheck.peers.witness import Witness
from loomcheck.spec.programs import CompleteOp, EmitOp, FlowProgram, InputOp, ObserveOp, StepOp, SuspendOp
from loomcheck.spec.vocabulary import vocabulary

JSON = Any


class WorkerCrash(Exception):
    """A crash fault in the flow program fired: the worker dies here (ADR 0104's
    faults). In-process peers see an exception escape the step; the adapter
    reports the operation as accepted with `crashed=True` and records nothing more."""


class EmitRefused(Exception):
    """The program emitted a kernel event type (ADR 0104 D1). The witness log is the
    suite's view of the execution, so the walker refuses to write it there: the run
    fails, as the flow-program language says. The peer has no such rule of its own."""


class Peer(Protocol):
    def step(self, step_id: str, body: Callable[[], JSON]) -> JSON:
        """Run `body` as the peer's durable step named `step_id`, or replay its recorded value."""
        ...

    def gate(self, index: int, condition: dict[str, JSON]) -> JSON:
        """The peer's wait for an answer at the index-th suspend point of the program;
        parks the run (the peer's own way) when it has none."""
        ...

    def input(self) -> JSON:
        """The input this run was handed."""
        ...


@dataclass(frozen=True)
class Passed:
    gate: int
    on: str
    value: JSON


def condition_of(op: SuspendOp) -> dict[str, JSON]:
    meta = {k: v for k, v in (op.meta or {}).items() if k != "stepId"}  # only the kernel sets stepId (ADR 0104 D2)
    return {**meta, "on": op.on}


def run_program(program: FlowProgram, execution: str, witness: Witness, peer: Peer) -> JSON:
    """One run of the flow. Returns the flow's output; the peer's park, a
    WorkerCrash or EmitRefused propagate."""
    kernel = vocabulary().kernel_types
    passed: list[Passed] = []
    point = 0

    def emit(event_type: str, payload: JSON) -> None:
        if event_type in kernel:
            raise EmitRefused(f"{event_type} is a kernel event type")
        witness.emit(execution, event_type, payload)

    for op in program.body:
        if isinstance(op, StepOp):
            run_step(op, execution, witness, peer)
        elif isinstance(op, SuspendOp):
            index, point = point, point + 1
            passed.append(Passed(index, op.on, peer.gate(index, condition_of(op))))
        elif isinstance(op, ObserveOp):
            for seen in passed:
                emit("loomcheck.observed", {"gate": seen.gate, "on": seen.on, "value": seen.value})
            passed.clear()
        elif isinstance(op, InputOp):
            emit("loomcheck.input", {"value": peer.input()})
        elif isinstance(op, EmitOp):
            emit(op.type, op.payload)
        elif isinstance(op, CompleteOp):
            return op.output
        else:  # the adapter's define_flow keeps programs needing undeclared features out
            raise NotImplementedError(f"op {type(op).__name__} is not mapped to this peer")
    return None


def run_step(op: StepOp, execution: str, witness: Witness, peer: Peer) -> JSON:
    ran = []

    def body() -> JSON:
        attempt = witness.started(execution, op.id) + 1
        ran.append(attempt)
        witness.append(execution, "STEP_STARTED", {"stepId": op.id, "attempt": attempt})
        crash = op.crash
        if crash is not None and attempt in (crash.attempts or [1]):
            raise WorkerCrash(f"{op.id}#{attempt} {crash.at}")
        return op.output

    value = peer.step(op.id, body)
    if ran:  # the peer ran the body in this call: what it hands back is what it recorded
        witness.append(execution, "STEP_COMPLETED", {"stepId": op.id, "output": value})
    return value

