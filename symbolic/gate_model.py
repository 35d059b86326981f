"""z3 checks of the gate relation (symbolic/gate_relation.py): bounded model checking,
the induction proof for histories of every length and any number of gates, and
witnesses that the relation is not vacuous (docs/model-checking.md#the-gate-model-in-z3).
Every solver call is bounded; a timeout is "unknown", never "proved"."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import z3

from loomcheck.symbolic.gate_relation import (BROKEN, CORRECT, Choice, Copy, Rules, canonical, choice, fresh, init,
                                              invariant, parts, strengthened, transition)
from loomcheck.symbolic.gate_traces import decode_step, decode_trace

TIMEOUT_MS = 10_000


@dataclass
class Bmc:
    rules: str
    bound: int                 # the depth asked for
    reached: int = 0           # every depth 1..reached proved free of violations
    seconds: float = 0.0
    verdict: str = "proved"    # proved (to `reached`) | violated | unknown (a timeout, or the time budget)
    counterexample: list[str] = field(default_factory=list)


@dataclass
class Induction:
    rules: str
    base: str = "unknown"      # Init => I
    step: str = "unknown"      # I and T => I'
    implies: str = "unknown"   # I => Inv
    seconds: float = 0.0
    counterexample: list[str] = field(default_factory=list)   # a counterexample to induction, decoded

    @property
    def proved(self) -> bool:
        return self.base == self.step == self.implies == "proved"


def bounded_solver(timeout_ms: int, ctx: z3.Context) -> z3.Solver:
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", timeout_ms)
    return solver


def verdict_of(result: z3.CheckSatResult) -> str:
    """unsat proves the claim; sat refutes it; unknown (a timeout included) is neither."""
    if result == z3.unsat:
        return "proved"
    return "violated" if result == z3.sat else "unknown"


def bmc(bound: int = 12, rules: Rules = CORRECT, timeout_ms: int = TIMEOUT_MS, budget_s: float = 15.0,
        gates: int | None = None) -> Bmc:
    """For k = 1..bound: is Init and T^k and not Inv(s_k) satisfiable? Incremental, one
    fresh copy per step, each conjunct of Inv asked separately; once depth k is clean,
    Inv(s_k) is asserted as a lemma for the deeper queries (sound: no history breaks it
    there; it keeps depth 16 near 2 s where it took 15 s to depth 6 without). `gates`
    fixes G; None leaves it symbolic (every G >= 1 at once). `budget_s` stops deepening:
    the depths not reached are reported as unknown."""
    name = next((key for key, value in BROKEN.items() if value == rules), "correct")
    result = Bmc(name, bound)
    began = time.perf_counter()
    ctx = z3.Context()
    G = z3.Int("G", ctx)
    solver = bounded_solver(timeout_ms, ctx)
    solver.add(G >= 1 if gates is None else G == gates)
    copies = [fresh("0", ctx)]
    actions: list[Choice] = []
    solver.add(init(copies[0]))
    for depth in range(1, bound + 1):
        if time.perf_counter() - began > budget_s:
            result.verdict = "unknown"
            break
        actions.append(choice(str(depth - 1), ctx))
        copies.append(fresh(str(depth), ctx))
        solver.add(transition(G, copies[-2], actions[-1], copies[-1], rules))
        verdict = "proved"
        for claim in parts(G, copies[-1]).values():   # one conjunct at a time: smaller queries, faster sat
            solver.push()
            solver.add(z3.Not(claim))
            found = verdict_of(solver.check())
            if found == "violated":
                result.counterexample = decode_trace(solver.model(), G, copies, actions)
            solver.pop()
            verdict = found if found != "proved" else verdict
            if found == "violated":
                break
        if verdict == "violated":
            result.verdict = verdict
            break
        if verdict == "unknown":
            result.verdict = verdict
            break
        result.reached = depth
        # Sound and much faster: no history of this length breaks Inv here (just proved), so
        # every longer history satisfies Inv at this copy too; assert it as a lemma.
        solver.add(invariant(G, copies[-1]))
    result.seconds = time.perf_counter() - began
    return result


def induction(rules: Rules = CORRECT, timeout_ms: int = TIMEOUT_MS, gates: int | None = None) -> Induction:
    """Init => I; I(s) and T(s, a, t) => I(t); I => Inv. For every G >= 1 unless `gates` fixes it."""
    name = next((key for key, value in BROKEN.items() if value == rules), "correct")
    result = Induction(name)
    began = time.perf_counter()
    ctx = z3.Context()
    G = z3.Int("G", ctx)
    g_range = G >= 1 if gates is None else G == gates
    s, t, a = fresh("s", ctx), fresh("t", ctx), choice("a", ctx)

    def check(*claims: z3.BoolRef) -> tuple[str, z3.ModelRef | None]:
        solver = bounded_solver(timeout_ms, ctx)
        solver.add(g_range, *claims)
        verdict = verdict_of(solver.check())
        return verdict, solver.model() if verdict == "violated" else None

    result.base = check(init(s), z3.Not(strengthened(G, s)))[0]
    step = (strengthened(G, s), transition(G, s, a, t, rules), z3.Not(strengthened(G, t)))
    # A counterexample to induction is first looked for among small, canonical pre-states
    # (every one a state satisfying I, so a model found there is a genuine CTI): z3 finds
    # those at once, where the open query can time out building a model of the lambdas.
    # Only the open query can prove the step.
    verdict, model = check(*step, *canonical(G, s))
    if verdict != "violated":
        verdict, model = check(*step)
    result.step = verdict
    if model is not None:
        result.counterexample = decode_step(model, G, s, a, t)
    result.implies = check(strengthened(G, s), z3.Not(invariant(G, s)))[0]
    result.seconds = time.perf_counter() - began
    return result


def reach(depth: int, goal: Callable[[z3.ArithRef, Copy], z3.BoolRef], gates: int | None = None,
          timeout_ms: int = TIMEOUT_MS) -> list[str] | None:
    """A history of exactly `depth` operations from Init to a state meeting `goal`, decoded;
    None when the (guided) search found none or gave up: a witness, never a proof of absence.
    Shows the relation is not vacuous."""
    ctx = z3.Context()
    G = z3.Int("G", ctx)
    copies = [fresh(f"r{i}", ctx) for i in range(depth + 1)]
    actions = [choice(f"r{i}", ctx) for i in range(depth)]
    solver = bounded_solver(timeout_ms, ctx)
    solver.add(G >= 1 if gates is None else G == gates, init(copies[0]), goal(G, copies[-1]),
               *(transition(G, copies[i], actions[i], copies[i + 1]) for i in range(depth)))
    # Guide the search (any model is still a real history): each copy observes exactly its
    # entries below n, as every reachable state does. Without it z3 can time out on sat.
    solver.add(*(canonical(G, c, 10 ** 9)[1] for c in copies[1:]))
    if solver.check() != z3.sat:
        return None
    return decode_trace(solver.model(), G, copies, actions)[:-1]


def main() -> int:
    for name, rules in [("correct", CORRECT), *BROKEN.items()]:
        checked = bmc(16, rules)
        proof = induction(rules)
        print(f"{name}: BMC {checked.verdict}, no violation to depth {checked.reached} of {checked.bound} ({checked.seconds:.2f} s); "
              f"induction base {proof.base}, step {proof.step}, I => Inv {proof.implies} ({proof.seconds:.2f} s)")
        for line in checked.counterexample + proof.counterexample:
            print(f"    {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
