"""The z3 gate relation (symbolic/gate_relation.py) checked against the Python model it
encodes (properties/abstract.py): for every state the Python model reaches and every
action, the same successor or the same refusal."""

from __future__ import annotations

import z3

from loomcheck.properties import abstract
from loomcheck.symbolic.gate_model import TIMEOUT_MS, bounded_solver
from loomcheck.symbolic.gate_relation import (COMPLETED, CORRECT, CRASHED, NEW, NO_CRASH, NOWHERE, PARKED, RECOVER,
                                              RESUME, START, Copy, Rules, choice, fresh, int_vars, transition)


def _python_copy(state: "abstract.State", flow: "abstract.Flow", G: z3.ArithRef) -> dict[str, z3.ExprRef]:
    """A Python model state as z3 values (properties/abstract.py, gate_flow with observe after each gate)."""
    ctx = G.ctx
    j, v = int_vars(ctx, "py_j", "py_v")
    statuses = {abstract.NEW: NEW, abstract.PARKED: PARKED, abstract.CRASHED: CRASHED, abstract.COMPLETED: COMPLETED}
    done = list(state.done)
    ran = done.index(False) if False in done else len(done)
    assert not any(done[ran:]), "the completed steps are a prefix"
    entries = list(state.answers)

    def table(cells: list[int]) -> z3.ArrayRef:
        array: z3.ArrayRef = z3.K(z3.IntSort(ctx), z3.IntVal(0, ctx))
        for index, cell in enumerate(cells):
            array = z3.Store(array, index, cell)
        return array

    observed: z3.ArrayRef = z3.Lambda([j, v], z3.BoolVal(False, ctx))
    for gate, values in enumerate(state.observed):
        for value in values:
            observed = z3.Store(observed, gate, int(value), True)
    return {
        "status": z3.IntVal(statuses[state.status], ctx), "n": z3.IntVal(len(entries), ctx),
        "values": table([int(e.value) for e in entries]),
        "at": table([NOWHERE if e.parked_at is None else e.parked_at for e in entries]),
        "named": table([_gate_number(flow, e.named) for e in entries]),
        "park": z3.IntVal(NOWHERE if state.parked_at is None else state.parked_at, ctx),
        "observed": observed, "ran": z3.IntVal(ran, ctx),
    }


def _gate_number(flow: "abstract.Flow", name: str | None) -> int:
    index = flow.gate_index(name) if name is not None else None
    return index if index is not None else 1000   # a name of no gate


def _pinned(c: Copy, values: dict[str, z3.ExprRef], upto: int) -> z3.BoolRef:
    """c holds the Python state: every field, the entries below n, the observations exactly."""
    cells = [z3.And(c.values[i] == values["values"][i], c.at[i] == values["at"][i], c.named[i] == values["named"][i])
             for i in range(upto)]
    parked = z3.Implies(c.status == PARKED, c.park == values["park"])
    return z3.And(c.status == values["status"], c.n == values["n"], c.ran == values["ran"], parked, *cells,
                  c.observed == values["observed"])


def agrees_with_python(gates: int, answers: int = 2, rules: Rules = CORRECT, timeout_ms: int = TIMEOUT_MS,
                       stop_at_first: bool = False) -> tuple[int, list[str]]:
    """For every state the Python model reaches (G gates, a step at every position, observe
    after each gate, each step dying at most once) and every action of its alphabet: the z3 relation has a successor
    exactly when the Python model does, and that successor is the Python one. Returns
    (pairs checked, disagreements)."""
    flow = abstract.gate_flow(gates, observe="each")
    ctx = z3.Context()
    G = z3.IntVal(gates, ctx)
    seen, frontier = {abstract.initial(flow)}, [abstract.initial(flow)]
    while frontier:
        following = []
        for state in frontier:
            for action in abstract.alphabet(flow, answers):
                if not abstract.enabled_crash(flow, state, action, 1):
                    continue  # the states a crash budget of 1 reaches (more crashes: more attempts, nothing new)
                moved = abstract.step(flow, state, action)
                if moved is not None and moved[1] not in seen:
                    seen.add(moved[1])
                    following.append(moved[1])
        frontier = following
    s, t, a = fresh("ps", ctx), fresh("pt", ctx), choice("pa", ctx)
    solver = bounded_solver(timeout_ms, ctx)
    kinds = {abstract.Start: START, abstract.Resume: RESUME, abstract.Recover: RECOVER}
    checked, disagreements = 0, []
    for state in seen:
        before = _python_copy(state, flow, G)
        for action in abstract.alphabet(flow, answers):
            moved = abstract.step(flow, state, action)
            crash = NO_CRASH if action.crash is None else flow.steps.index(action.crash)
            fixed = [_pinned(s, before, len(state.answers)), a.kind == kinds[type(action)], a.crash == crash,
                     transition(G, s, a, t, rules)]
            if isinstance(action, abstract.Resume):
                fixed += [a.name == _gate_number(flow, action.name), a.value == int(action.value)]
            solver.push()
            solver.add(*fixed)
            if moved is None:
                verdict = solver.check()
                agreed = verdict == z3.unsat
            else:
                expected = _python_copy(moved[1], flow, G)
                verdict = solver.check(z3.Not(_pinned(t, expected, len(moved[1].answers))))
                agreed = verdict == z3.unsat and solver.check() == z3.sat
            solver.pop()
            checked += 1
            if not agreed:
                disagreements.append(f"{abstract.describe(action)} from {state}: z3 {verdict}")
                if stop_at_first:
                    return checked, disagreements
    return checked, disagreements
