"""The abstract model of the gate-answer discipline (properties/abstract.py): its
exhaustive exploration (explore/abstract_search.py), seeded broken models it must catch, and the reference's
refinement of it (properties/refinement.py), with seeded mutant kernels it must catch."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from typing import Callable

import pytest

from loomcheck.properties import abstract
from loomcheck.properties.abstract import (
    CRASHED,
    PARKED,
    Entry,
    Flow,
    Recover,
    Resume,
    State,
)
from loomcheck.explore.abstract_search import explore_abstract
from loomcheck.properties.refinement import REFINES, covered, refines
from loomcheck.contract.driver import Driver
from loomcheck.contract.script import Define, Operation, Recover as RecoverOp, Resume as ResumeOp, Start as StartOp
from loomcheck.contract.session import Session, hello_of
from loomcheck.reference.driver import ReferenceDriver

# -- the model explored -------------------------------------------------------------------


def test_exploration_reaches_its_bound_with_no_violation() -> None:
    stats = explore_abstract(max_gates=3, depth=12)
    assert stats.violations == []
    assert stats.depth == 12 and stats.flows == 6
    assert stats.exhausted  # the reachable space ended before the bound: every history of any length
    assert stats.distinct > 100 and stats.explored > stats.distinct
    assert stats.histories > 10 ** 12
    assert stats.statuses == {abstract.PARKED, abstract.CRASHED, abstract.COMPLETED}


def test_a_larger_crash_budget_is_explored_to_the_bound() -> None:
    stats = explore_abstract(max_gates=2, depth=12, answers=3, crash_budget=2)
    assert stats.violations == [] and stats.depth == 12


# -- seeded broken models: exploration must find each with a short trace ------------------------
RECOVERY_ANSWER = "{}"


def pre_0104_recovery(flow: Flow, state: State, action: abstract.Action):
    """Recovery records EXECUTION_RESUMED {}: an entry no resume gave (what ADR 0104 removed)."""
    if isinstance(action, Recover) and state.status == CRASHED:
        entry = Entry(RECOVERY_ANSWER, None, "EXECUTION_RECOVERED")
        after = abstract.drive(flow, replace(state, answers=state.answers + (entry,)), action.crash)
        return None if after is None else (abstract.accepted(after), after)
    return abstract.step(flow, state, action)


def early_answer(flow: Flow, state: State, action: abstract.Action):
    """A resume of a crashed execution is recorded (ADR 0104 D4 refuses it)."""
    if isinstance(action, Resume) and state.status == CRASHED:
        entry = Entry(action.value, None, action.name)
        after = abstract.drive(flow, replace(state, answers=state.answers + (entry,)), action.crash)
        return None if after is None else (abstract.accepted(after), after)
    return abstract.step(flow, state, action)


def any_gate(flow: Flow, state: State, action: abstract.Action):
    """The ingress gate does not check the name."""
    if isinstance(action, Resume) and state.status == PARKED and state.parked_at is not None:
        entry = Entry(action.value, state.parked_at, action.name)
        after = abstract.drive(flow, replace(state, answers=state.answers + (entry,), parked_at=None), action.crash)
        return None if after is None else (abstract.accepted(after), after)
    return abstract.step(flow, state, action)


def latest_answer(flow: Flow, state: State, action: abstract.Action):
    """Pre-0057: every gate passes with the latest answer."""
    moved = abstract.step(flow, state, action)
    if moved is None or not moved[0].accepted or not moved[1].answers:
        return moved
    latest = moved[1].answers[-1].value
    observed = tuple(values | {latest} if values else values for values in moved[1].observed)
    return moved[0], replace(moved[1], observed=observed)


@pytest.mark.parametrize("transition, invariant, trace", [
    (pre_0104_recovery, "answer.one-suspend-point", ("start, worker dies in s0", "recover")),
    (early_answer, "answer.one-suspend-point", ("start, worker dies in s0", "resume g1 0")),
    (any_gate, "answer.addressed-while-parked", ("start", "resume wrong 0")),
    (latest_answer, "gate.i-receives-entry-i", ("start", "resume g1 0", "resume g2 1")),
])
def test_a_broken_model_is_caught_with_a_short_trace(transition: Callable, invariant: str, trace: tuple[str, ...]) -> None:
    stats = explore_abstract(max_gates=2, depth=6, transition=transition)
    found = [v for v in stats.violations if v.invariant == invariant]
    assert found, [v.invariant for v in stats.violations]
    assert min(len(v.trace) for v in found) == len(trace)
    assert any(v.trace == trace for v in found), [v.trace for v in found]


def test_the_invariants_judge_states() -> None:
    flow = abstract.gate_flow(2)
    state = abstract.initial(flow)
    assert abstract.violations(flow, state) == []
    stray = replace(state, status=CRASHED, answers=(Entry(0, None, "g1"),), done=(True, False, False))
    assert [i for i, _ in abstract.violations(flow, stray)] == ["answer.one-suspend-point"]
    wrong = replace(state, status=PARKED, parked_at=1, answers=(Entry(0, 0, "g1"),),
                    observed=(frozenset({1}), frozenset()), done=(True, True, False))
    assert [i for i, _ in abstract.violations(flow, wrong)] == ["gate.i-receives-entry-i"]


# -- refinement: the reference kernel takes the model's transitions ---------------------------------
TWO_GATES = {"language": "loomcheck-flow/1", "body": [
    {"op": "step", "id": "a", "crash": {"at": "before-effect", "attempts": [1]}},
    {"op": "suspend", "on": "g1"}, {"op": "observe"},
    {"op": "step", "id": "b", "crash": {"at": "after-effect", "attempts": [1, 2]}},
    {"op": "suspend", "on": "g2"}, {"op": "observe"},
    {"op": "step", "id": "c", "crash": {"at": "before-effect", "attempts": [1]}},
]}
OBSERVED_AT_THE_END = {"language": "loomcheck-flow/1", "body": [
    {"op": "suspend", "on": "approve"}, {"op": "step", "id": "x", "crash": {"at": "after-effect", "attempts": [1]}},
    {"op": "suspend", "on": "ship"}, {"op": "observe"}, {"op": "complete", "output": 1},
]}
LETTERS: list[Operation] = [StartOp("e", "f"), RecoverOp("e")] + [
    ResumeOp("e", name, payload) for name in ("g1", "g2", "approve", "ship", "wrong") for payload in (0, {"ok": 1})]


def walk(make: Callable[[], Driver], program: dict, depth: int) -> tuple[int, int, list]:
    """Every history of LETTERS up to `depth` after defining the flow, deduplicated by the
    log (a deterministic kernel behaves the same from the same log), each prefix re-executed.
    Returns (steps checked, steps covered, [(history, violations)])."""
    driver = make()
    session = Session(driver, frozenset(hello_of(driver).features))
    seen: set[str] = set()
    frontier: list[tuple[Operation, ...]] = [()]
    checked = inside = 0
    failures = []
    for _ in range(depth):
        following = []
        for history in frontier:
            for letter in LETTERS:
                session.reset()
                session.apply(Define("f", program))
                for op in history:
                    session.apply(op)
                step = session.apply(letter)
                checked += 1
                inside += covered(step, session.trace)
                found = refines(step, session.trace)
                if found:
                    failures.append((history + (letter,), found))
                    continue
                key = json.dumps(step.log_after)
                if key not in seen:
                    seen.add(key)
                    following.append(history + (letter,))
        frontier = following
    return checked, inside, failures


@pytest.mark.parametrize("program", [TWO_GATES, OBSERVED_AT_THE_END], ids=["crashing-steps", "observed-at-end"])
def test_the_reference_refines_the_model(program: dict) -> None:
    checked, inside, failures = walk(lambda: ReferenceDriver(store="memory"), program, depth=8)
    assert failures == []
    assert checked == inside and checked > 100  # every step was one the model covers


@pytest.mark.parametrize("mutant", ["recovery_resumes", "any_gate", "early_answer", "skipped_gate", "single_slot",
                                    "rerun_steps", "recovers_parked", "bare_resume", "appending_refusal"])
def test_refinement_catches_a_mutant_kernel(mutant: str) -> None:
    make = importlib.import_module(f"mutants.{mutant}").make
    _, _, failures = walk(make, TWO_GATES, depth=6)
    assert failures
    assert all(v.invariant == REFINES for _, found in failures for v in found)


def test_shapes_the_model_does_not_cover_are_not_judged() -> None:
    driver = ReferenceDriver(store="memory")
    session = Session(driver, frozenset(hello_of(driver).features))
    session.apply(Define("h", {"language": "loomcheck-flow/1", "body": [
        {"op": "step", "id": "h", "kind": "human"}, {"op": "sleep", "ms": 5}]}))
    step = session.apply(StartOp("x", "h"))
    assert not covered(step, session.trace) and refines(step, session.trace) == []
    session.apply(Define("f", TWO_GATES))
    step = session.apply(StartOp("y", "f"))
    assert covered(step, session.trace)
    step = session.apply(ResumeOp("y", "EXECUTION_RESUMED", {}))  # the kernel namespace is not modelled
    assert not covered(step, session.trace)
