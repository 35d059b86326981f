"""z3 proofs of what the emit guard's meter sentence means for a kernel in any language
(ADR 0104 D1): the accepted floats are one range of bit patterns, each ceiling is one
float, and rounding an integer to a float keeps it on its side of the ceiling
(docs/model-checking.md#the-emit-guard-in-z3)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import z3

from loomcheck.spec.vocabulary import vocabulary
from loomcheck.symbolic.meter_encoding import (F64, TIMEOUT_MS, Acceptor, as_float, ceiling_float, ceiling_groups,
                                               exact_real, float_term, spec_accepts)

NEGATIVE_ZERO_BITS = 1 << 63


def _ground_bits(term: z3.FPRef) -> int:
    return z3.simplify(z3.fpToIEEEBV(term)).as_long()


def _show_bits(bits: int) -> str:
    return f"{as_float(bits)!r} (bits 0x{bits:016x})"


@dataclass(frozen=True)
class Proof:
    name: str
    proved: bool | None       # True: the negation is unsat; False: z3 found a counterexample; None: unknown
    counterexample: str | None
    seconds: float
    detail: str = ""          # z3's reason when the answer is unknown (a timeout, say)


def _prove(name: str, negation: Sequence[z3.BoolRef], show: Callable[[z3.ModelRef], str],
           timeout_ms: int = TIMEOUT_MS) -> Proof:
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(*negation)
    started = time.perf_counter()
    verdict = solver.check()
    seconds = time.perf_counter() - started
    if verdict == z3.unsat:
        return Proof(name, True, None, seconds)
    if verdict == z3.sat:
        return Proof(name, False, show(solver.model()), seconds)
    return Proof(name, None, None, seconds, solver.reason_unknown())


def prove_accepted_set_is_interval(name: str, ceiling: Fraction, accepts: Acceptor = spec_accepts) -> Proof:
    """(a) Over all 2**64 bit patterns: accepted iff the pattern is -0.0 or lies in
    [0, bits(c)] unsigned. Non-negative floats are ordered by their patterns, and
    every NaN, +inf and negative pattern is above bits(c), so this says: NaN (any
    payload), both infinities and every negative non-zero float are refused, -0.0
    and every float in [+0.0, c] accepted, every float above c refused."""
    c = ceiling_float(ceiling)
    bits = z3.BitVec("bits", 64)
    interval = z3.Or(bits == NEGATIVE_ZERO_BITS, z3.ULE(bits, _ground_bits(c)))
    return _prove(name, [accepts(z3.fpBVToFP(bits, F64), c) != interval],
                  lambda m: _show_bits(m.eval(bits, model_completion=True).as_long()))


def prove_ceiling_is_one_float(name: str, ceiling: Fraction, declared: Sequence[float] = ()) -> Proof:
    """(b) The literal rounds to the same float downward and upward, so it IS a float
    and "c" means one value in every language; and the floats an implementation
    read from the spec (`declared`) are that float. A ground computation: z3 does
    the exact rational rounding, there is nothing to search."""
    exact = exact_real(ceiling)
    down, up = z3.fpToFP(z3.RTN(), exact, F64), z3.fpToFP(z3.RTP(), exact, F64)
    wrong = [down != up] + [ceiling_float(ceiling) != float_term(value) for value in declared]

    def show(_: z3.ModelRef) -> str:
        if _ground_bits(down) != _ground_bits(up):
            return (f"{ceiling} is not a float: it lies between {as_float(_ground_bits(down))!r} and "
                    f"{as_float(_ground_bits(up))!r}")
        return f"{ceiling} is the float {as_float(_ground_bits(down))!r}, but the spec as read says {list(declared)}"

    return _prove(name, [z3.Or(*wrong)], show)


def prove_integers_round_safely(name: str, ceiling: Fraction) -> Proof:
    """(c) For EVERY integer n: the float n rounds to (to nearest, ties to even:
    Python's float(n), a JS JSON.parse) is accepted by the spec encoding iff
    0 <= n <= c exactly. A JSON integer is an exact number; this is what makes
    converting it to a float first safe. Three regions cover the integers: z3
    proves the middle one, [-2**63, 2**63), over 64-bit integers (a bit-vector
    query, fast), and the two tails over unbounded z3 Ints. (One query over Int
    alone is correct too but takes 1 to over 10 s per ceiling: rounding an
    arbitrary-precision integer is hard for z3's real-to-float conversion.)"""
    c, top = ceiling_float(ceiling), ceiling.numerator // ceiling.denominator  # n <= c iff n <= floor(c)
    word = z3.BitVec("n", 64)
    within = z3.And(word >= 0, word <= min(top, 2**63 - 1))  # signed comparisons: the integer's own order
    middle = [spec_accepts(z3.fpSignedToFP(z3.RNE(), word, F64), c) != within]
    n = z3.Int("n")
    rounded = z3.fpToFP(z3.RNE(), z3.ToReal(n), F64)
    # Every n in the upper tail is above a ceiling below 2**63, so the spec refuses it;
    # stating that verdict instead of an equivalence keeps the query small.
    above = [n >= 2**63, spec_accepts(rounded, c) if top < 2**63 else spec_accepts(rounded, c) != (n <= top)]
    below = [n < -(2**63), spec_accepts(rounded, c)]

    def show(model: z3.ModelRef) -> str:
        found = model.eval(word, model_completion=True).as_signed_long() if model.get_interp(word) is not None \
            else model.eval(n, model_completion=True).as_long()
        return (f"n = {found}: float(n) = {float(found)!r} is {'accepted' if found > ceiling else 'refused'}, "
                f"but n is {'above' if found > ceiling else 'within'} the ceiling {ceiling}")

    parts = [_prove(name, negation, show) for negation in (middle, above, below)]
    seconds = sum(part.seconds for part in parts)
    for part in parts:
        if part.proved is not True:  # the first refutation or unknown is the answer
            return Proof(name, part.proved, part.counterexample, seconds, part.detail)
    return Proof(name, True, None, seconds)


def emit_guard_proofs() -> list[Proof]:
    """Every proof for the spec's ceilings, one set per distinct ceiling."""
    declared = vocabulary().emit_guard.meter_ceilings
    proofs = []
    for ceiling, names in ceiling_groups().items():
        label = f"[{', '.join(names)} <= {ceiling}]"
        proofs.append(prove_accepted_set_is_interval(f"meter.accepted-set-is-interval{label}", ceiling))
        proofs.append(prove_ceiling_is_one_float(f"meter.ceiling-is-one-float{label}", ceiling,
                                                 [declared[name] for name in names]))
        proofs.append(prove_integers_round_safely(f"meter.integers-round-safely{label}", ceiling))
    return proofs
