"""Does an implementation refine the abstract model (properties/abstract.py)? The
abstraction function reads an execution's log into the model's state; `refines`
checks one step against the model's transition, for the shapes `covered` accepts.
How and for which flows: docs/model-checking.md#the-abstract-model-and-its-refinement."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Hashable

from loomcheck.properties.abstract import (
    COMPLETED,
    CRASHED,
    GATE,
    NEW,
    OBSERVE,
    PARKED,
    STEP,
    Action,
    Entry,
    Flow,
    Outcome,
    Recover,
    Resume,
    Start,
    State,
    describe,
    initial,
    step as model_step,
)
from loomcheck.properties.emitted import plain_json
from loomcheck.contract.script import Recover as RecoverOp
from loomcheck.contract.script import Resume as ResumeOp
from loomcheck.contract.script import Start as StartOp
from loomcheck.contract.session import Step, Trace
from loomcheck.contract.logview import code_changed, migrated
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.names import OBSERVED_EVENT
from loomcheck.spec.profiles import reasons_agree
from loomcheck.spec.programs import CompleteOp, FlowProgram, ObserveOp, StepOp, SuspendOp
from loomcheck.spec.vocabulary import kernel_event_types

# Proposed catalogue id (not yet in spec/invariants): the implementation refines the
# abstract model of the gate-answer discipline on every covered step.
REFINES = "model.refines-gate-discipline"

RECOVERED = "EXECUTION_RECOVERED"


@dataclass(frozen=True)
class Modelled:
    """A program the model covers: its abstract flow and, per step, the attempts it crashes on."""

    flow: Flow
    crashes: dict[str, frozenset[int]]


def modelled(program: FlowProgram | None) -> Modelled | None:
    """The abstract flow of a plain gate sequence, or None for any other shape."""
    if program is None or program.validateInput or program.resumeSchemas:
        return None
    body: list[tuple[str, str]] = []
    crashes: dict[str, frozenset[int]] = {}
    for op in program.body:
        if isinstance(op, CompleteOp):
            break  # the body ends there (the output is not modelled)
        if isinstance(op, SuspendOp):
            if op.meta or op.has_view() or op.viewDigest is not None or op.timeout is not None:
                return None
            body.append((GATE, op.on))
        elif isinstance(op, StepOp):
            if op.kind != "idempotent" or op.emits:
                return None
            body.append((STEP, op.id))
            crashes[op.id] = frozenset(op.crash.attempts) if op.crash is not None else frozenset()
        elif isinstance(op, ObserveOp):
            body.append((OBSERVE, ""))
        else:
            return None
    flow = Flow(tuple(body))
    if len(set(flow.gates)) != len(flow.gates) or set(flow.gates) & kernel_event_types():
        return None
    return Modelled(flow, crashes)


NO_EXECUTION = Modelled(Flow(()), {})  # a resume or recovery of an unknown execution: refused before any flow matters


def model_of(step: Step, trace: Trace) -> Modelled | None:
    """The program the step runs, as the model sees it (None: a shape it does not cover)."""
    if step.log_before:
        return modelled(trace.flow_of(step.log_before, step.execution))
    if isinstance(step.op, StartOp):
        return modelled(trace.flows.get(step.op.flow))
    return NO_EXECUTION


def covered(step: Step, trace: Trace) -> bool:
    return _covered_model(step, trace) is not None


def _covered_model(step: Step, trace: Trace) -> "Modelled | None":
    """The model of a step the refinement covers, else None (`covered`'s reasons, in order)."""
    op = step.op
    if not isinstance(op, (StartOp, ResumeOp, RecoverOp)) or step.execution is None:
        return None
    if step.execution in trace.snapshots or trace.security or migrated(step.log_before):
        return None
    if isinstance(op, ResumeOp) and (op.options or op.type in kernel_event_types()):
        return None
    if step.log_before and code_changed(trace.registered, step.log_before):
        return None  # K11 code-mismatch is not modelled
    if isinstance(op, StartOp) and op.flow not in trace.flows:
        return None  # an unknown flow and a duplicate id may both apply; which is checked first is not specified
    if not plain_json(op.input if isinstance(op, StartOp) else getattr(op, "payload", None)):
        return None  # invalid-input and invalid-payload are not the model's: it abstracts values away
    return model_of(step, trace)


def value_of(payload: Any) -> Hashable:
    """An answer's abstract value: an int as itself, any other JSON as its canonical text."""
    if type(payload) is int:
        return payload
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Unmodelled:
    """The log holds something the model never writes."""

    seq: Any
    what: str


def abstraction(log: list[dict[str, Any]], flow: Flow) -> State | Unmodelled:
    """The model state a log stands for (the fold's answer rule, ADR 0057 with ADR 0104 D3)."""
    state = initial(flow)
    status, parked_at = NEW, None
    answers: list[Entry] = []
    observed = [set(values) for values in state.observed]
    runs, done = list(state.runs), list(state.done)
    kernel = kernel_event_types()
    previous: str | None = None
    typed: Any = None   # the seq of a resume's typed event, until the EXECUTION_RESUMED the model writes after it
    for event in log:
        kind, payload, seq = event.get("type"), event.get("payload"), event.get("seq")
        fields = payload if isinstance(payload, dict) else {}
        if typed is not None and kind != "EXECUTION_RESUMED":
            return Unmodelled(typed, f"{previous!r}, a resume's event with no EXECUTION_RESUMED after it")
        typed = None
        if kind == "EXECUTION_STARTED":
            status, parked_at = CRASHED, None
        elif kind == "EXECUTION_SUSPENDED":
            condition = fields.get("condition")
            on = condition.get("on") if isinstance(condition, dict) else None
            index = flow.gate_index(on) if isinstance(on, str) else None
            if index is None:
                return Unmodelled(seq, f"a park on {on!r}, no gate of the flow")
            status, parked_at = PARKED, index
        elif kind == "EXECUTION_RESUMED":
            if payload is not None or status == PARKED:  # D3: a null resume while not parked is status-only
                answers.append(Entry(value_of(payload), parked_at if status == PARKED else None, previous))
            status, parked_at = CRASHED, None
        elif kind == "EXECUTION_COMPLETED":
            status, parked_at = COMPLETED, None
        elif kind in ("STEP_STARTED", "STEP_COMPLETED"):
            step_id = fields.get("stepId")
            if step_id not in flow.steps:
                return Unmodelled(seq, f"{kind} of {step_id!r}, no step of the flow")
            index = flow.steps.index(step_id)
            if kind == "STEP_STARTED":
                runs[index] += 1
            else:
                done[index] = True
        elif kind == OBSERVED_EVENT:
            gate = fields.get("gate")
            if type(gate) is not int or not 0 <= gate < len(flow.gates):
                return Unmodelled(seq, f"an observation of gate {gate!r}")
            observed[gate].add(value_of(fields.get("value")))
        elif kind == RECOVERED:
            pass  # ADR 0104 D1: no fold handler, it records nothing
        elif kind in kernel:
            return Unmodelled(seq, f"{kind}, which the model never writes")
        else:
            # Anything else is a resume's typed event: it names the gate, read by the EXECUTION_RESUMED after it.
            typed = seq
        previous = kind if isinstance(kind, str) else None
    if typed is not None:
        return Unmodelled(typed, f"{previous!r}, a resume's event with no EXECUTION_RESUMED after it")
    return State(status, tuple(answers), parked_at, tuple(frozenset(v) for v in observed), tuple(runs), tuple(done))


def action_of(step: Step, model: Modelled, before: State) -> Action:
    """The model's action for a harness operation, the crash read off the program: the
    first step the drive starts on an attempt its `crash` lists."""
    op = step.op
    def make(crash: str | None) -> Action:
        if isinstance(op, StartOp):
            return Start(crash)
        if isinstance(op, ResumeOp):
            return Resume(op.type, value_of(op.payload), crash)
        return Recover(crash)
    for index, step_id in enumerate(model.flow.steps):
        attempt = before.runs[index] + 1
        if attempt in model.crashes[step_id] and model_step(model.flow, before, make(step_id)) is not None:
            return make(step_id)  # steps start in body order, so the first enabled one is where it dies
    return make(None)


def outcome_of(step: Step) -> Outcome:
    return Outcome(step.outcome.ok, None if step.outcome.ok else step.outcome.reason, bool(step.outcome.crashed))


@predicate(REFINES)
def refines(step: Step, trace: Trace) -> list[Violation]:
    """[] when the step is not covered or the implementation took the model's transition."""
    model = _covered_model(step, trace)
    if model is None:
        return []
    seqs = tuple(e["seq"] for e in step.log_after[len(step.log_before):][:3])
    before = abstraction(step.log_before, model.flow)
    if isinstance(before, Unmodelled):
        return [Violation(REFINES, f"before {step.op.op}: #{before.seq} {before.what}.", (before.seq,))]
    action = action_of(step, model, before)
    moved = model_step(model.flow, before, action)
    assert moved is not None  # action_of only picks enabled crash choices
    expected, predicted = moved
    after = abstraction(step.log_after, model.flow)
    found: list[Violation] = []
    actual = outcome_of(step)
    if not _agrees(action, before, expected, actual):
        found.append(Violation(REFINES, f"{describe(action)} on a {before.status} execution: the model "
                                        f"{show_outcome(expected)}, the implementation {show_outcome(actual)}.", seqs))
    if isinstance(after, Unmodelled):
        found.append(Violation(REFINES, f"after {describe(action)}: #{after.seq} {after.what}.", (after.seq,)))
    elif after != predicted:
        found.append(Violation(REFINES, f"after {describe(action)} the log stands for {show_state(after)}; the model "
                                        f"reaches {show_state(predicted)}.", seqs))
    return found


def _agrees(action: object, before: State, expected: Outcome, actual: Outcome) -> bool:
    """The same transition; a refusal by any reason the ADRs admit where the model gives its
    own (spec/profiles.toml: a finished execution's recovery or resume, terminal or not-suspended)."""
    if expected.accepted or actual.accepted or expected.reason is None or actual.reason is None:
        return actual == expected
    operation = "recover" if isinstance(action, Recover) else "resume" if isinstance(action, Resume) else "start"
    situation = "terminal" if before.status == COMPLETED else None
    return actual.crashed == expected.crashed and reasons_agree(operation, expected.reason, actual.reason, situation)


def show_outcome(outcome: Outcome) -> str:
    if not outcome.accepted:
        return f"refuses it ({outcome.reason})"
    return "accepts it (the worker dies)" if outcome.crashed else "accepts it"


def show_state(state: State) -> str:
    answers = ", ".join(f"{e.value!r}@{'none' if e.parked_at is None else e.parked_at}/{e.named}" for e in state.answers)
    parked = f" at gate {state.parked_at}" if state.parked_at is not None else ""
    observed = {i: sorted(map(repr, v)) for i, v in enumerate(state.observed) if v}
    return (f"{state.status}{parked}, answers [{answers}], observed {observed}, runs {list(state.runs)}, "
            f"done {[int(d) for d in state.done]}")
