"""The abstract model of the gate-answer discipline (ADR 0057, ADR 0104), in plain Python:
one execution of a flow of gates, idempotent steps and observes; its states, actions and
transition relation, the rules of the discipline it must keep, and its finite alphabet.
No pydantic and no import of the reference: it is the specification the reference is
checked against (properties/refinement.py). What it keeps and why:
docs/model-checking.md#the-abstract-model-and-its-refinement; its exhaustive search:
explore/abstract_search.py."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Callable, Hashable, Iterable

NEW = "new"
PARKED = "parked"
CRASHED = "crashed"
COMPLETED = "completed"

GATE = "gate"
STEP = "step"
OBSERVE = "observe"

WRONG_GATE = "wrong"   # a resume naming no gate of the flow (the ingress gate's other case)

# Refusal reasons, spelled as spec/refusals.toml spells them.
UNKNOWN_EXECUTION = "unknown-execution"
DUPLICATE_EXECUTION = "duplicate-execution"
NOT_SUSPENDED = "not-suspended"
GATE_MISMATCH = "gate-mismatch"
TERMINAL = "terminal"


# -- the flow ------------------------------------------------------------------------
@dataclass(frozen=True)
class Flow:
    """A flow body: (kind, name) pairs, kind one of gate, step, observe."""

    body: tuple[tuple[str, str], ...]

    @cached_property  # read on every model step and abstraction
    def gates(self) -> tuple[str, ...]:
        return tuple(name for kind, name in self.body if kind == GATE)

    @cached_property
    def steps(self) -> tuple[str, ...]:
        return tuple(name for kind, name in self.body if kind == STEP)

    def gate_index(self, name: str) -> int | None:
        return self.gates.index(name) if name in self.gates else None

    def describe(self) -> str:
        return " ".join(name if kind != OBSERVE else "observe" for kind, name in self.body)


def gate_flow(gates: int, steps: Iterable[int] | None = None, observe: str = "each") -> Flow:
    """Gates g1..gG; a step s<k> before gate k+1 for each k in `steps` (k == gates: after
    the last gate; default: every position); observe after each gate ("each"), once at
    the end ("end") or never ("none")."""
    positions = set(range(gates + 1) if steps is None else steps)
    body: list[tuple[str, str]] = []
    for k in range(gates + 1):
        if k in positions:
            body.append((STEP, f"s{k}"))
        if k < gates:
            body.append((GATE, f"g{k + 1}"))
            if observe == "each":
                body.append((OBSERVE, ""))
    if observe == "end":
        body.append((OBSERVE, ""))
    return Flow(tuple(body))


def shapes(gates: int) -> list[Flow]:
    """The flow shapes the explorer covers for G gates: a step at every position
    (the crash choice subsumes a step that never dies), observed after each gate or
    once at the end (a crash between a gate and its observe differs)."""
    return [gate_flow(gates, observe="each"), gate_flow(gates, observe="end")]


# -- the state -----------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One answer: its value, the gate the execution was parked at when it was
    recorded (None: parked at no gate) and the gate its resume named."""

    value: Hashable
    parked_at: int | None
    named: str | None


@dataclass(frozen=True)
class State:
    status: str
    answers: tuple[Entry, ...]
    parked_at: int | None
    observed: tuple[frozenset[Hashable], ...]   # per gate: every value it was observed passing with
    runs: tuple[int, ...]                         # per step: attempts started
    done: tuple[bool, ...]                        # per step: completed


def initial(flow: Flow) -> State:
    return State(NEW, (), None, tuple(frozenset() for _ in flow.gates), tuple(0 for _ in flow.steps),
                 tuple(False for _ in flow.steps))


# -- actions and outcomes ------------------------------------------------------------
@dataclass(frozen=True)
class Start:
    crash: str | None = None   # the step the worker dies in during this drive, if any


@dataclass(frozen=True)
class Resume:
    name: str
    value: Hashable
    crash: str | None = None


@dataclass(frozen=True)
class Recover:
    crash: str | None = None


Action = Start | Resume | Recover


@dataclass(frozen=True)
class Outcome:
    accepted: bool
    reason: str | None = None
    crashed: bool = False


def accepted(state: State) -> Outcome:
    return Outcome(True, None, state.status == CRASHED)


def describe(action: Action) -> str:
    dies = f", worker dies in {action.crash}" if action.crash else ""
    if isinstance(action, Start):
        return f"start{dies}"
    if isinstance(action, Resume):
        return f"resume {action.name} {action.value!r}{dies}"
    return f"recover{dies}"


# -- the transition relation -----------------------------------------------------------
def drive(flow: Flow, state: State, crash: str | None) -> State | None:
    """Re-run the flow from the top (ADR 0057): recorded steps replay, the i-th gate
    passes with entry i, the first gate past the answers parks. None when `crash`
    names a step this drive does not start (the choice is not enabled)."""
    runs, done = list(state.runs), list(state.done)
    observed = [set(values) for values in state.observed]
    passed: list[tuple[int, Hashable]] = []
    shown = consumed = gate = step = 0
    for kind, name in flow.body:
        if kind == STEP:
            if not done[step]:
                runs[step] += 1
                if crash == name:
                    return _settled(state, CRASHED, None, observed, runs, done)
                done[step] = True
            step += 1
        elif kind == GATE:
            if consumed >= len(state.answers):
                return None if crash is not None else _settled(state, PARKED, gate, observed, runs, done)
            passed.append((gate, state.answers[consumed].value))
            consumed += 1
            gate += 1
        else:
            for index, value in passed[shown:]:
                observed[index].add(value)
            shown = len(passed)
    return None if crash is not None else _settled(state, COMPLETED, None, observed, runs, done)


def _settled(state: State, status: str, parked_at: int | None, observed: list[set[Hashable]],
             runs: list[int], done: list[bool]) -> State:
    return replace(state, status=status, parked_at=parked_at, observed=tuple(frozenset(v) for v in observed),
                   runs=tuple(runs), done=tuple(done))


def refusal(state: State, action: Action, reason: str) -> tuple[Outcome, State] | None:
    """Refuse before append: the state is unchanged. A crash choice on a refused
    action is not enabled (nothing runs)."""
    return None if action.crash is not None else (Outcome(False, reason), state)


def step(flow: Flow, state: State, action: Action) -> tuple[Outcome, State] | None:
    """One operation. None when the action's crash choice is not enabled."""
    if isinstance(action, Start):
        if state.status != NEW:
            return refusal(state, action, DUPLICATE_EXECUTION)
        return _driven(drive(flow, state, action.crash))
    if state.status == NEW:
        return refusal(state, action, UNKNOWN_EXECUTION)
    if isinstance(action, Resume):
        # ADR 0104 D1, the ingress gate: only a parked execution, only the parked gate's name.
        if state.status != PARKED or state.parked_at is None:
            return refusal(state, action, NOT_SUSPENDED)
        if action.name != flow.gates[state.parked_at]:
            return refusal(state, action, GATE_MISMATCH)
        entry = Entry(action.value, state.parked_at, action.name)   # the payload IS that gate's answer
        return _driven(drive(flow, replace(state, answers=state.answers + (entry,), parked_at=None), action.crash))
    # Recover. ADR 0104 D4: a parked execution is refused; D1: a crashed one records nothing.
    if state.status == PARKED:
        return refusal(state, action, NOT_SUSPENDED)
    if state.status == COMPLETED:
        return refusal(state, action, TERMINAL)
    return _driven(drive(flow, state, action.crash))


def _driven(after: State | None) -> tuple[Outcome, State] | None:
    return None if after is None else (accepted(after), after)


Transition = Callable[[Flow, State, Action], "tuple[Outcome, State] | None"]


# -- invariants ------------------------------------------------------------------------
def passed(flow: Flow, state: State) -> int:
    """The gates the execution is past: where it is parked, all of them when completed,
    and when crashed the gates before the first step that has not completed (where
    the worker died, and where a recovery resumes running code)."""
    if state.status == NEW:
        return 0
    if state.status == PARKED and state.parked_at is not None:
        return state.parked_at
    if state.status == COMPLETED:
        return len(flow.gates)
    gates = step = 0
    for kind, _ in flow.body:
        if kind == GATE:
            gates += 1
        elif kind == STEP:
            if not state.done[step]:
                return gates
            step += 1
    return gates


def violations(flow: Flow, state: State) -> list[tuple[str, str]]:
    """(invariant id, explanation) for every rule of the discipline the state breaks.
    Ids are the catalogue's where one states the rule; `model.*` otherwise."""
    found: list[tuple[str, str]] = []
    gates, answers = flow.gates, state.answers
    for index, values in enumerate(state.observed):
        for value in values:
            if index >= len(answers) or answers[index].value != value:
                entry = repr(answers[index].value) if index < len(answers) else "no entry"
                found.append(("gate.i-receives-entry-i", f"gate {gates[index]} observed {value!r}; entry {index} is {entry}"))
    for index, entry in enumerate(answers):
        if entry.parked_at != index:
            where = "parked at no gate" if entry.parked_at is None else f"parked at {gates[entry.parked_at]}"
            found.append(("answer.one-suspend-point", f"entry {index} ({entry.value!r}) was recorded {where}, "
                                                      f"not at gate {index} (ADR 0104 D1)"))
        elif index < len(gates) and entry.named != gates[index]:
            found.append(("answer.addressed-while-parked", f"entry {index} was recorded by a resume naming "
                                                           f"{entry.named!r}, not the parked gate {gates[index]}"))
    if len(answers) != passed(flow, state):
        found.append(("model.answers-equal-gates-passed", f"{len(answers)} answer(s) recorded, "
                                                          f"{passed(flow, state)} gate(s) passed ({state.status})"))
    complete = len(answers) == len(gates)
    if (state.status == COMPLETED) != (complete and state.status != CRASHED) and state.status != NEW:
        found.append(("gate.completes-after-n-answers", f"{state.status} with {len(answers)} of {len(gates)} "
                                                         f"gate(s) answered"))
    return found


# -- the alphabet: every operation, and which crash choices are enabled -------------------
def alphabet(flow: Flow, answers: int = 2) -> list[Action]:
    """Every operation: start, recover, resume of each gate name and one wrong name
    with each answer id 0..answers-1; each with no crash or a crash in each step."""
    crashes: list[str | None] = [None, *flow.steps]
    letters: list[Action] = []
    for crash in crashes:
        letters.append(Start(crash))
        letters.append(Recover(crash))
        for name in (*flow.gates, WRONG_GATE):
            letters.extend(Resume(name, value, crash) for value in range(answers))
    return letters


def enabled_crash(flow: Flow, state: State, action: Action, budget: int) -> bool:
    """At most `budget` attempts of a step die (an idempotent step then runs again)."""
    return action.crash is None or state.runs[flow.steps.index(action.crash)] < budget
