"""z3: the abstract model of the gate-answer discipline (properties/abstract.py) as a
transition relation, checked by bounded model checking and proved by induction
for histories of every length and flows of ANY number of gates.

The flow: G gates (G a symbolic Int >= 1), a step before each gate and one after
the last (step k runs before gate k, step G after gate G-1), an observe after
each gate. Steps are idempotent; the worker may die in any step, any number of
times (the crash is the environment's choice, as in the Python model, with no
budget). One operation is one macro step: check, append, re-run from the top.

One fresh copy of the state per step (issue 9): every step k has its own
constants status_k, n_k, values_k, at_k, named_k, park_k, observed_k, ran_k
and its own action choice; T(k) relates copy k to copy k+1 by equalities, so
the terms never nest across steps.

    status    Int: NEW 0, PARKED 1, CRASHED 2, COMPLETED 3
    n         Int: how many answers are recorded
    values    Array Int -> Int: entry j's (abstract) value
    at        Array Int -> Int: the gate the execution was parked at when entry j
              was recorded (NOWHERE: parked at no gate)
    named     Array Int -> Int: the gate entry j's resume named
    park      Int: the gate it is parked at
    observed  Array (Int, Int) -> Bool: gate j was observed passing with value v
    ran       Int: steps 0..ran-1 have completed. Exact, not an abstraction: a
              run completes a prefix of the steps, so the completed steps are
              always a prefix (the Python model keeps them per step)

The gate-answer invariant (Inv), what ADR 0057 and ADR 0104 D1 state:
    1. gate j observes only entry j:  observed[j, v] => 0 <= j < n and v == values[j]
    2. every entry answers exactly its own park, addressed by name:
       0 <= j < n => at[j] == j and named[j] == j
    3. completed => n == G;  parked => park == n < G
    4. crashed => the gates passed before the first step not completed are n
       (ran == n): answers == gates passed.
The strengthened, inductive invariant I adds 0 <= n <= G, a known status, and
exactly which steps are done in each status (none when new; ran == n + 1 when
parked; ran == G + 1 when completed). Init => I, I and T => I', I => Inv
are proved for symbolic G, so Inv holds after every history of every length.

Every solver call is bounded (`timeout`); a timeout or unknown is reported as
"unknown", never as proved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import z3

from loomcheck.properties import abstract
NEW, PARKED, CRASHED, COMPLETED = 0, 1, 2, 3
STATUS = {NEW: "new", PARKED: "parked", CRASHED: "crashed", COMPLETED: "completed"}
START, RESUME, RECOVER = 0, 1, 2
NO_CRASH = -1
NOWHERE = -1        # recorded while parked at no gate
RECOVERY_NAME = -2  # the pre-0104 recovery's EXECUTION_RESUMED {} names no gate
RECOVERY_VALUE = -1  # its {}

TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class Rules:
    """The transition relation's rules; the defaults are ADR 0057 + ADR 0104's.
    Each flag seeds one historical or plausible bug."""

    recovery_answers: bool = False   # pre-0104: recovery appends EXECUTION_RESUMED {} (an entry)
    early_answer: bool = False       # a resume of a crashed (running) execution is recorded (D4 refuses it)
    any_gate: bool = False           # the ingress gate does not check the name (before #305)
    single_slot: bool = False        # pre-0057: every gate passes with the latest answer


CORRECT = Rules()
BROKEN = {
    "recovery_answers": Rules(recovery_answers=True),
    "early_answer": Rules(early_answer=True),
    "any_gate": Rules(any_gate=True),
    "single_slot": Rules(single_slot=True),
}


@dataclass(frozen=True)
class Copy:
    """One copy of the state variables."""

    status: z3.ArithRef
    n: z3.ArithRef
    values: z3.ArrayRef
    at: z3.ArrayRef
    named: z3.ArrayRef
    park: z3.ArithRef
    observed: z3.ArrayRef
    ran: z3.ArithRef


@dataclass(frozen=True)
class Choice:
    """The action taken from one copy: its kind, the gate named, the value, the crash."""

    kind: z3.ArithRef
    name: z3.ArithRef
    value: z3.ArithRef
    crash: z3.ArithRef


# Every check builds its terms in a context of its own: z3's search depends on the order
# terms were created in, so sharing the global context made one check's speed (and, near a
# timeout, its verdict) depend on which checks ran before it in the process.
def fresh(tag: str, ctx: z3.Context) -> Copy:
    ints = z3.ArraySort(z3.IntSort(ctx), z3.IntSort(ctx))
    pairs = z3.ArraySort(z3.IntSort(ctx), z3.IntSort(ctx), z3.BoolSort(ctx))
    return Copy(z3.Int(f"status_{tag}", ctx), z3.Int(f"n_{tag}", ctx), z3.Const(f"values_{tag}", ints),
                z3.Const(f"at_{tag}", ints), z3.Const(f"named_{tag}", ints), z3.Int(f"park_{tag}", ctx),
                z3.Const(f"observed_{tag}", pairs), z3.Int(f"ran_{tag}", ctx))


def choice(tag: str, ctx: z3.Context) -> Choice:
    return Choice(z3.Int(f"action_{tag}", ctx), z3.Int(f"name_{tag}", ctx), z3.Int(f"value_{tag}", ctx),
                  z3.Int(f"crash_{tag}", ctx))


def _bound(ctx: z3.Context, *names: str) -> list[z3.ArithRef]:
    return [z3.Int(name, ctx) for name in names]


def init(s: Copy) -> z3.BoolRef:
    j, v = _bound(s.n.ctx, "j", "v")
    return z3.And(s.status == NEW, s.n == 0, s.park == NOWHERE,
                  s.observed == z3.Lambda([j, v], z3.BoolVal(False, s.n.ctx)), s.ran == 0)


def same(s: Copy, t: Copy) -> z3.BoolRef:
    return z3.And(t.status == s.status, t.n == s.n, t.values == s.values, t.at == s.at, t.named == s.named,
                  t.park == s.park, t.observed == s.observed, t.ran == s.ran)


def transition(G: z3.ArithRef, s: Copy, a: Choice, t: Copy, rules: Rules = CORRECT) -> z3.BoolRef:
    """T(s, a, t): the operation a taken from copy s gives copy t."""
    parked, crashed = s.status == PARKED, s.status == CRASHED
    ctx = s.n.ctx
    gate_ok = z3.BoolVal(True, ctx) if rules.any_gate else a.name == s.park
    resume_ok = z3.And(parked, gate_ok)
    if rules.early_answer:
        resume_ok = z3.Or(resume_ok, crashed)
    ok = z3.Or(z3.And(a.kind == START, s.status == NEW), z3.And(a.kind == RESUME, resume_ok),
               z3.And(a.kind == RECOVER, crashed))
    # ADR 0104 D1: a resume's payload is an entry, recorded with the park it answers.
    appends = a.kind == RESUME
    value, named = a.value, a.name
    if rules.recovery_answers:
        appends = z3.Or(appends, a.kind == RECOVER)
        value = z3.If(a.kind == RECOVER, z3.IntVal(RECOVERY_VALUE, ctx), value)
        named = z3.If(a.kind == RECOVER, z3.IntVal(RECOVERY_NAME, ctx), named)
    where = z3.If(parked, s.park, NOWHERE)
    n = z3.If(appends, s.n + 1, s.n)
    values = z3.If(appends, z3.Store(s.values, s.n, value), s.values)
    at = z3.If(appends, z3.Store(s.at, s.n, where), s.at)
    names = z3.If(appends, z3.Store(s.named, s.n, named), s.named)
    accepted = z3.And(t.n == n, t.values == values, t.at == at, t.named == names,
                      drive(G, n, values, s.ran, s.observed, a.crash, t, rules))
    # Refuse before append: nothing changes, and a crash choice is not enabled (nothing runs).
    refused = z3.And(a.crash == NO_CRASH, same(s, t))
    return z3.And(z3.Or(a.kind == START, a.kind == RESUME, a.kind == RECOVER), z3.If(ok, accepted, refused))


def drive(G: z3.ArithRef, n: z3.ArithRef, values: z3.ArrayRef, ran: z3.ArithRef, observed: z3.ArrayRef,
          crash: z3.ArithRef, t: Copy, rules: Rules) -> z3.BoolRef:
    """Re-run from the top (ADR 0057): gates 0..m-1 pass with entries 0..m-1 (m = min(n, G)),
    then park at gate n, or complete; or the worker dies in step `crash`, which the run
    must reach (crash <= m) and not have completed."""
    m = z3.If(n < G, n, G)
    dies = crash != NO_CRASH
    reaches = z3.And(ran <= crash, crash <= m)          # steps below `ran` replay; they cannot die
    stop = z3.If(dies, crash, m)                       # gates passed (and observed) by this run
    upto = z3.If(dies, crash, z3.If(n < G, n + 1, G + 1))   # this run completes steps k < upto
    served = values[n - 1] if rules.single_slot else None
    j, v = _bound(n.ctx, "j", "v")
    return z3.And(
        z3.Implies(dies, reaches),
        t.status == z3.If(dies, CRASHED, z3.If(n < G, PARKED, COMPLETED)),
        t.park == z3.If(z3.And(z3.Not(dies), n < G), n, NOWHERE),
        t.ran == z3.If(upto > ran, upto, ran),
        t.observed == z3.Lambda([j, v], z3.Or(observed[j, v], z3.And(
            0 <= j, j < stop, v == (served if served is not None else values[j])))),
    )


# -- invariants ---------------------------------------------------------------------------
def parts(G: z3.ArithRef, s: Copy) -> dict[str, z3.BoolRef]:
    """The gate-answer invariant, conjunct by conjunct (named for the report). Each
    "for all j" is written as an array equality with a lambda (a ⊆ b as a == a ∧ b),
    which means the same and keeps every query quantifier-free: z3 then decides the
    refutations (sat) as quickly as the proofs (unsat), and evaluates them in a model."""
    j, v = _bound(s.n.ctx, "inv_j", "inv_v")
    below_n = z3.And(0 <= j, j < s.n)
    return {
        "gate.i-receives-entry-i": s.observed == z3.Lambda([j, v], z3.And(s.observed[j, v], below_n,
                                                                           v == s.values[j])),
        "answer.one-suspend-point": s.at == z3.Lambda([j], z3.If(below_n, j, s.at[j])),
        "answer.addressed-while-parked": s.named == z3.Lambda([j], z3.If(below_n, j, s.named[j])),
        "gate.completes-after-n-answers": z3.And(z3.Implies(s.status == COMPLETED, s.n == G),
                                                 z3.Implies(s.status == PARKED, z3.And(s.park == s.n, s.n < G))),
        "model.answers-equal-gates-passed": z3.Implies(s.status == CRASHED, z3.And(s.n <= G, s.ran == s.n)),
    }


def invariant(G: z3.ArithRef, s: Copy) -> z3.BoolRef:
    return z3.And(*parts(G, s).values())


def strengthened(G: z3.ArithRef, s: Copy) -> z3.BoolRef:
    """I: Inv, the answer count within the gates, a known status, and exactly which
    steps are done in each status."""
    return z3.And(
        invariant(G, s),
        0 <= s.n, s.n <= G,
        z3.Or(s.status == NEW, s.status == PARKED, s.status == CRASHED, s.status == COMPLETED),
        z3.Implies(s.status == NEW, z3.And(s.n == 0, s.ran == 0)),
        z3.Implies(s.status == PARKED, s.ran == s.n + 1),
        z3.Implies(s.status == CRASHED, s.ran == s.n),
        z3.Implies(s.status == COMPLETED, s.ran == G + 1),
    )


# -- results ---------------------------------------------------------------------------------
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


def _solver(timeout_ms: int, ctx: z3.Context) -> z3.Solver:
    solver = z3.Solver(ctx=ctx)
    solver.set("timeout", timeout_ms)
    return solver


def _verdict(result: z3.CheckSatResult) -> str:
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
    solver = _solver(timeout_ms, ctx)
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
            found = _verdict(solver.check())
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


def canonical(G: z3.ArithRef, s: Copy, most_gates: int = 4) -> list[z3.BoolRef]:
    """Where refutations are searched first: at most `most_gates` gates, and each gate below
    n observed with its own entry only (what every reachable state of the model holds)."""
    j, v = _bound(s.n.ctx, "hint_j", "hint_v")
    return [G <= most_gates, s.observed == z3.Lambda([j, v], z3.And(0 <= j, j < s.n, v == s.values[j]))]


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
        solver = _solver(timeout_ms, ctx)
        solver.add(g_range, *claims)
        verdict = _verdict(solver.check())
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
    solver = _solver(timeout_ms, ctx)
    solver.add(G >= 1 if gates is None else G == gates, init(copies[0]), goal(G, copies[-1]),
               *(transition(G, copies[i], actions[i], copies[i + 1]) for i in range(depth)))
    # Guide the search (any model is still a real history): each copy observes exactly its
    # entries below n, as every reachable state does. Without it z3 can time out on sat.
    solver.add(*(canonical(G, c, 10 ** 9)[1] for c in copies[1:]))
    if solver.check() != z3.sat:
        return None
    return decode_trace(solver.model(), G, copies, actions)[:-1]


# -- decoding a model into something a person reads -----------------------------------------------
def _int(model: z3.ModelRef, term: z3.ExprRef) -> int:
    value = model.eval(term, model_completion=True)
    return value.as_long() if isinstance(value, z3.IntNumRef) else 0


def _bool(model: z3.ModelRef, term: z3.ExprRef) -> bool:
    return z3.is_true(model.eval(term, model_completion=True))


@dataclass(frozen=True)
class Decoded:
    """One copy of the state as the model gives it (entries and observations up to a limit)."""

    gates: int
    status: str
    n: int
    park: int
    entries: tuple[tuple[int, int, int], ...]      # (value, at, named)
    observed: tuple[tuple[int, int], ...]          # (gate, value)
    ran: int


def decode(model: z3.ModelRef, G: z3.ArithRef, s: Copy, limit: int = 6) -> Decoded:
    n = _int(model, s.n)
    shown = range(max(0, min(n + 1, limit)))
    entries = tuple((_int(model, s.values[j]), _int(model, s.at[j]), _int(model, s.named[j])) for j in shown if j < n)
    candidates = sorted({_int(model, s.values[j]) for j in shown} | {RECOVERY_VALUE})
    observed = tuple((j, v) for j in range(limit) for v in candidates if _bool(model, s.observed[j, v]))
    status = _int(model, s.status)
    return Decoded(_int(model, G), STATUS.get(status, f"status {status}"), n, _int(model, s.park), entries, observed,
                   _int(model, s.ran))


def broken(state: Decoded) -> list[str]:
    """The conjuncts of Inv the decoded state breaks, judged again in Python (so the
    report does not rest on evaluating array equalities in a model)."""
    found = []
    if any(j >= state.n or j >= len(state.entries) or state.entries[j][0] != v for j, v in state.observed):
        found.append("gate.i-receives-entry-i")
    if any(at != j for j, (_, at, _) in enumerate(state.entries)):
        found.append("answer.one-suspend-point")
    if any(named != j for j, (_, _, named) in enumerate(state.entries)):
        found.append("answer.addressed-while-parked")
    if (state.status == "completed" and state.n != state.gates) or \
            (state.status == "parked" and not state.park == state.n < state.gates):
        found.append("gate.completes-after-n-answers")
    if state.status == "crashed" and not (state.n <= state.gates and state.ran == state.n):
        found.append("model.answers-equal-gates-passed")
    return found


def show_copy(state: Decoded) -> str:
    park = f" at g{state.park + 1}" if state.status == "parked" else ""
    entries = []
    for value, at, named in state.entries:
        where = "no park" if at == NOWHERE else f"park g{at + 1}"
        who = "EXECUTION_RECOVERED" if named == RECOVERY_NAME else f"g{named + 1}"
        entries.append(f"{value} (recorded at {where}, named {who})")
    more = " ..." if len(state.entries) < state.n else ""
    seen = ", ".join(f"g{j + 1}:{v}" for j, v in state.observed)
    return (f"{state.status}{park}, {state.n} answer(s) [{'; '.join(entries)}{more}], observed [{seen}], "
            f"steps completed {state.ran}")


def show_choice(model: z3.ModelRef, a: Choice) -> str:
    kind, crash = _int(model, a.kind), _int(model, a.crash)
    dies = f", worker dies in step s{crash}" if crash != NO_CRASH else ""
    if kind == START:
        return f"start{dies}"
    if kind == RESUME:
        name = _int(model, a.name)
        return f"resume {f'g{name + 1}' if name >= 0 else f'a wrong name ({name})'} with {_int(model, a.value)}{dies}"
    return f"recover{dies}"


def decode_trace(model: z3.ModelRef, G: z3.ArithRef, copies: list[Copy], actions: list[Choice]) -> list[str]:
    lines = [f"G = {_int(model, G)} gate(s)"]
    for index, action in enumerate(actions):
        lines.append(f"{index + 1}. {show_choice(model, action)} -> {show_copy(decode(model, G, copies[index + 1]))}")
    lines.append(f"violates: {', '.join(broken(decode(model, G, copies[-1]))) or '(beyond the decoded entries)'}")
    return lines


def decode_step(model: z3.ModelRef, G: z3.ArithRef, s: Copy, a: Choice, t: Copy) -> list[str]:
    after = decode(model, G, t)
    return [f"G = {_int(model, G)} gate(s)", f"from a state satisfying I: {show_copy(decode(model, G, s))}",
            f"action: {show_choice(model, a)}", f"to: {show_copy(after)}",
            f"which leaves I; Inv broken: {', '.join(broken(after)) or 'no, only the strengthening'}"]


# -- the encoding is the Python model -------------------------------------------------------------
def _python_copy(state: "abstract.State", flow: "abstract.Flow", G: z3.ArithRef) -> dict[str, z3.ExprRef]:
    """A Python model state as z3 values (properties/abstract.py, gate_flow with observe after each gate)."""
    ctx = G.ctx
    j, v = _bound(ctx, "py_j", "py_v")
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
    solver = _solver(timeout_ms, ctx)
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
