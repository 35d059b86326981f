"""The generic flow body: one run of a flow program (its JSON), from the top, inside a peer's
workflow, calling the peer's own step and gate primitives and noting what the peer does in the
witness. Rendered into every peer reproducer (docs/peers.md, "How an adapter works")."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from loomcheck.peers.witness import Witness

JSON = Any


class WorkerCrash(Exception):
    """A crash fault in the flow program fired: the worker dies here (ADR 0104's faults). In-process
    peers see an exception escape the step; the adapter reports the operation as accepted with
    `crashed=True` and records nothing more."""


class EmitRefused(Exception):
    """The program emitted a kernel event type (ADR 0104 D1). The witness log is the suite's view of
    the execution, so the walker refuses to write it there: the run fails, as the flow-program
    language says. The peer has no such rule of its own."""


class Peer(Protocol):
    def step(self, step_id: str, body: Callable[[], JSON]) -> JSON:
        """Run `body` as the peer's durable step named `step_id`, or replay its recorded value."""
        ...

    def gate(self, index: int, condition: dict[str, JSON]) -> JSON:
        """The peer's wait for an answer at the index-th suspend point of the program; parks the
        run (the peer's own way) when it has none."""
        ...

    def input(self) -> JSON:
        """The input this run was handed."""
        ...


def condition_of(op: dict[str, JSON]) -> dict[str, JSON]:
    """A suspend op's condition: its meta and its gate's name."""
    meta = {k: v for k, v in (op.get("meta") or {}).items() if k != "stepId"}  # only the kernel sets stepId (ADR 0104 D2)
    return {**meta, "on": op["on"]}


def run_program(program: dict[str, JSON], execution: str, witness: Witness, peer: Peer,
                kernel_types: frozenset[str]) -> JSON:
    """One run of the flow. Returns the flow's output; the peer's park, a WorkerCrash or
    EmitRefused propagate. The adapter's define_flow keeps programs needing undeclared features
    out, so only these ops arrive."""
    passed: list[tuple[int, str, JSON]] = []  # (gate, on, value) since the last observe
    point = 0

    def emit(event_type: str, payload: JSON) -> None:
        if event_type in kernel_types:
            raise EmitRefused(f"{event_type} is a kernel event type")
        witness.emit(execution, event_type, payload)

    for op in program["body"]:
        kind = op["op"]
        if kind == "step":
            run_step(op, execution, witness, peer)
        elif kind == "suspend":
            index, point = point, point + 1
            passed.append((index, op["on"], peer.gate(index, condition_of(op))))
        elif kind == "observe":
            for gate, on, value in passed:
                emit("loomcheck.observed", {"gate": gate, "on": on, "value": value})
            passed.clear()
        elif kind == "input":
            emit("loomcheck.input", {"value": peer.input()})
        elif kind == "emit":
            emit(op["type"], op.get("payload"))
        elif kind == "complete":
            return op.get("output")
        else:
            raise NotImplementedError(f"op {kind!r} is not mapped to this peer")
    return None


def run_step(op: dict[str, JSON], execution: str, witness: Witness, peer: Peer) -> JSON:
    """A step through the peer's step primitive, with a body that notes each run in the witness."""
    ran = []
    crash = op.get("crash")

    def body() -> JSON:
        attempt = witness.started(execution, op["id"]) + 1
        ran.append(attempt)
        witness.append(execution, "STEP_STARTED", {"stepId": op["id"], "attempt": attempt})
        if crash is not None and attempt in (crash.get("attempts") or [1]):
            raise WorkerCrash(f"{op['id']}#{attempt} {crash['at']}")
        return op.get("output")

    value = peer.step(op["id"], body)
    if ran:  # the peer ran the body in this call: what it hands back is what it recorded
        witness.append(execution, "STEP_COMPLETED", {"stepId": op["id"], "output": value})
    return value
