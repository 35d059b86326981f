"""z3: the gate-answer discipline's abstract model (properties/abstract.py) as a
transition relation over one fresh copy of the state per step, with its invariant
and the strengthening that makes it inductive (docs/model-checking.md#the-gate-model-in-z3)."""

from __future__ import annotations

from dataclasses import dataclass

import z3

NEW, PARKED, CRASHED, COMPLETED = 0, 1, 2, 3
STATUS = {NEW: "new", PARKED: "parked", CRASHED: "crashed", COMPLETED: "completed"}
START, RESUME, RECOVER = 0, 1, 2
NO_CRASH = -1
NOWHERE = -1        # recorded while parked at no gate
RECOVERY_NAME = -2  # the pre-0104 recovery's EXECUTION_RESUMED {} names no gate
RECOVERY_VALUE = -1  # its {}


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


def int_vars(ctx: z3.Context, *names: str) -> list[z3.ArithRef]:
    """Integer variables to bind in a lambda."""
    return [z3.Int(name, ctx) for name in names]


def init(s: Copy) -> z3.BoolRef:
    j, v = int_vars(s.n.ctx, "j", "v")
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
    j, v = int_vars(n.ctx, "j", "v")
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
    j, v = int_vars(s.n.ctx, "inv_j", "inv_v")
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


def canonical(G: z3.ArithRef, s: Copy, most_gates: int = 4) -> list[z3.BoolRef]:
    """Where refutations are searched first: at most `most_gates` gates, and each gate below
    n observed with its own entry only (what every reachable state of the model holds)."""
    j, v = int_vars(s.n.ctx, "hint_j", "hint_v")
    return [G <= most_gates, s.observed == z3.Lambda([j, v], z3.And(0 <= j, j < s.n, v == s.values[j]))]
