"""z3 checks of the emit guard's meter and quota rules (ADR 0104 D1).

The spec says: "Every meter field present must be a finite number in
[0, ceiling]" (the ceilings are spec/events.toml [emit_guard.meter_ceilings])
and a QUOTA_EXCEEDED "reason must be a string of at most 1024 characters".
This module

1. encodes the meter sentence in z3's Float64 theory (`spec_accepts`) and
   proves, as unsat of the negation under a timeout, what it means for a kernel
   in any language: the accepted floats are exactly one range of bit patterns,
   [+0.0, c] plus -0.0 (every NaN payload, both infinities, every negative
   non-zero float and every float above c refused); each ceiling literal is
   exactly one float; and rounding any integer to a float (to nearest, ties to
   even: Python's float(n), JS's JSON.parse) keeps it on the same side of the
   ceiling, which is what makes the reference's `float(value)` safe;
2. derives the boundary witnesses from z3 models, each with the verdict of the
   spec encoding, never of an implementation;
3. replays the witnesses on a validator (by default the reference's
   `meter_problem` and `quota_problem`) and lists every disagreement.

What it does not prove: that a validator written in Python accepts exactly the
spec's set (z3 cannot read Python); the validators are checked on the boundary
witnesses, and the proofs say those boundaries are the only ones there are.
The quota witnesses are built directly: the rule is a length bound, and z3's
string theory would only restate it (its lengths count code points, which is
the decision taken below, not evidence for it).

Run `python -m loomcheck.symbolic.guards` to print every proof with its time.
"""

from __future__ import annotations

import struct
import time
import tomllib
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cache
from typing import Any, Callable, Iterable, Mapping, Sequence

import z3

from loomcheck.reference.emitguard import meter_problem, quota_problem
from loomcheck.spec.canonical import MAX_SAFE_INTEGER, CanonicalError, canonical_json
from loomcheck.spec.files import SPEC_ROOT
from loomcheck.spec.vocabulary import vocabulary

TIMEOUT_MS = 10_000  # per solver call: a proof that needs longer reports unknown, not proved
F64 = z3.Float64()
NEGATIVE_ZERO_BITS = 1 << 63
METER, QUOTA = "RESOURCE_METERED", "QUOTA_EXCEEDED"
METER_REASONS = frozenset({"invalid-meter"})
QUOTA_REASONS = frozenset({"invalid-quota"})
# A payload that is not an object: spec/refusals.toml names it under invalid-emit ("an
# allow-listed kernel type whose payload is not an object") while the reference says
# invalid-meter / invalid-quota; both are the emit guard refusing, so either is taken.
METER_SHAPE_REASONS = frozenset({"invalid-emit", "invalid-meter"})
QUOTA_SHAPE_REASONS = frozenset({"invalid-emit", "invalid-quota"})
ASTRAL = "\N{GRINNING FACE}"  # U+1F600: one character (code point), two UTF-16 code units


# -- the spec, exactly --------------------------------------------------------------

@cache
def spec_ceilings() -> dict[str, Fraction]:
    """The ceilings as the spec writes them: its decimal literals, exact (parsing them
    as floats would already have rounded, and whether that rounds is proof (b))."""
    text = (SPEC_ROOT / "events.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text, parse_float=Decimal)["emit_guard"]["meter_ceilings"]
    return {name: Fraction(value) for name, value in raw.items()}


def ceiling_groups() -> dict[Fraction, tuple[str, ...]]:
    """Fields sharing a ceiling share its proofs (ms and wallMs, memBytes and netBytes)."""
    groups: dict[Fraction, tuple[str, ...]] = {}
    for name, ceiling in spec_ceilings().items():
        groups[ceiling] = groups.get(ceiling, ()) + (name,)
    return groups


def _real(value: Fraction) -> z3.ArithRef:
    return z3.Q(value.numerator, value.denominator)


def ceiling_float(ceiling: Fraction) -> z3.FPRef:
    """The float a kernel compares with: the literal rounded to nearest, as TOML and JSON parsers do."""
    return z3.fpToFP(z3.RNE(), _real(ceiling), F64)


def spec_accepts(x: z3.FPRef, ceiling: z3.FPRef) -> z3.BoolRef:
    """ADR 0104 D1, word for word: "a finite number in [0, ceiling]". IEEE comparison
    is exact, so with the ceiling exactly one float (proof b) this is the sentence
    over the reals; -0.0 >= 0 holds, as it should: -0 is the number 0."""
    return z3.And(z3.Not(z3.fpIsNaN(x)), z3.Not(z3.fpIsInf(x)),
                  z3.fpGEQ(x, z3.FPVal(0.0, F64)), z3.fpLEQ(x, ceiling))


Acceptor = Callable[[z3.FPRef, z3.FPRef], z3.BoolRef]


# -- floats and bit patterns ------------------------------------------------------------

def as_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def bits_of(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def _fp(value: float) -> z3.FPRef:
    """A Python float as a z3 constant, through its bit pattern so nothing rounds."""
    return z3.fpBVToFP(z3.BitVecVal(bits_of(value), 64), F64)


def _ground_bits(term: z3.FPRef) -> int:
    return z3.simplify(z3.fpToIEEEBV(term)).as_long()


def _show_bits(bits: int) -> str:
    return f"{as_float(bits)!r} (bits 0x{bits:016x})"


# -- proofs ---------------------------------------------------------------------------

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
    exact = _real(ceiling)
    down, up = z3.fpToFP(z3.RTN(), exact, F64), z3.fpToFP(z3.RTP(), exact, F64)
    wrong = [down != up] + [ceiling_float(ceiling) != _fp(value) for value in declared]

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


# -- witnesses ------------------------------------------------------------------------

@dataclass(frozen=True)
class Witness:
    event: str                  # RESOURCE_METERED or QUOTA_EXCEEDED
    label: str
    payload: Any
    accepted: bool              # the spec's verdict
    reasons: frozenset[str]     # the refusal reasons the spec names when it refuses

    @property
    def expressible(self) -> bool:
        """Whether a flow program can carry it. Programs are JSON and a program's code
        version hashes its canonical JSON (spec/versions.py), which refuses NaN, the
        infinities and integers beyond +-(2**53 - 1): those stay in-process."""
        try:
            canonical_json(self.payload)
        except CanonicalError:
            return False
        return True


def _solve_bits(description: z3.BoolRef, bits: z3.BitVecRef, unique: bool = True) -> int:
    """The one bit pattern z3 finds for a description; with `unique`, also that it is the only one."""
    solver = z3.Solver()
    solver.set("timeout", TIMEOUT_MS)
    solver.add(description)
    if solver.check() != z3.sat:
        raise RuntimeError(f"z3 found no float for {description} ({solver.reason_unknown()})")
    found = solver.model().eval(bits, model_completion=True).as_long()
    if unique:
        solver.add(bits != found)
        if solver.check() != z3.unsat:
            raise RuntimeError(f"{description} does not describe one float")
    return found


@cache
def boundary_floats(ceiling: Fraction) -> tuple[tuple[str, int], ...]:
    """(label, bit pattern) of each boundary of the accepted set, each solved by z3 from
    a description that uses the spec encoding and the bit-pattern neighbours of a float
    (pattern +-1 is the next float away from / toward zero: z3 has no fp.next)."""
    c = ceiling_float(ceiling)
    bits = z3.BitVec("bits", 64)
    x, after, before = (z3.fpBVToFP(b, F64) for b in (bits, bits + 1, bits - 1))
    positive = z3.Extract(63, 63, bits) == 0
    nonzero = z3.Not(z3.fpIsZero(x))
    descriptions = (
        ("the ceiling: the largest float accepted", z3.And(positive, spec_accepts(x, c), z3.Not(spec_accepts(after, c)))),
        ("the smallest float above the ceiling", z3.And(positive, z3.Not(spec_accepts(x, c)), spec_accepts(before, c))),
        ("-0.0", z3.And(z3.fpIsZero(x), z3.fpIsNegative(x))),
        ("+0.0", z3.And(z3.fpIsZero(x), z3.fpIsPositive(x))),
        ("the smallest positive float (a subnormal)", z3.And(positive, nonzero, z3.fpIsZero(before))),
        ("the largest negative float (-subnormal)", z3.And(z3.Not(positive), nonzero, z3.fpIsZero(before))),
        ("the largest finite float", z3.And(positive, z3.Not(z3.fpIsInf(x)), z3.Not(z3.fpIsNaN(x)), z3.fpIsInf(after))),
        ("+infinity", z3.And(positive, z3.fpIsInf(x))),
        ("-infinity", z3.And(z3.Not(positive), z3.fpIsInf(x))),
    )
    found = [(label, _solve_bits(description, bits)) for label, description in descriptions]
    found.append(("NaN", _solve_bits(z3.fpIsNaN(x), bits, unique=False)))  # 2**53 - 2 patterns; (a) covers them all
    return tuple(found)


def integer_values(ceiling: Fraction) -> list[tuple[str, int]]:
    """JSON integers at the edges: exact numbers, so their verdict is the sentence over the integers."""
    top = ceiling.numerator // ceiling.denominator
    return [("the ceiling as an integer", top), ("the ceiling + 1, an integer", top + 1), ("-1", -1),
            ("2**53 - 1, the largest integer a flow program carries", MAX_SAFE_INTEGER),
            ("10**400, an integer float() cannot convert", 10**400)]


def spec_verdict(value: Any, ceiling: Fraction) -> bool:
    """The spec's verdict on one meter field, from the encoding (z3 evaluates it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False  # "a non-numeric increment is refused"; JSON true/false are not numbers
    if isinstance(value, int):
        claim = z3.And(z3.IntVal(value) >= 0, z3.ToReal(z3.IntVal(value)) <= _real(ceiling))
    else:
        claim = spec_accepts(_fp(value), ceiling_float(ceiling))
    return z3.is_true(z3.simplify(claim))


def spec_meter_verdict(payload: Any, ceilings: Mapping[str, Fraction]) -> bool:
    """The payload is { tokens?, costUsd?, ms?, wallMs?, memBytes?, netBytes? } (spec/events.toml)."""
    if not isinstance(payload, dict):
        return False
    return all(spec_verdict(payload[name], ceiling) for name, ceiling in ceilings.items() if name in payload)


def _brief(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**20:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)


@cache
def meter_witnesses() -> tuple[Witness, ...]:
    ceilings = spec_ceilings()
    non_numbers: list[tuple[str, Any]] = [("true", True), ("false (== 0 in Python)", False),
                                          ('the string "1"', "1"), ("null", None)]
    found = []
    for name, ceiling in ceilings.items():
        values: list[tuple[str, Any]] = [(label, as_float(bits)) for label, bits in boundary_floats(ceiling)]
        for label, value in values + integer_values(ceiling) + non_numbers:
            payload = {name: value}
            found.append(Witness(METER, f"{name} = {_brief(value)}: {label}", payload,
                                 spec_meter_verdict(payload, ceilings), METER_REASONS))
    found.append(Witness(METER, "{}: every field is optional", {}, spec_meter_verdict({}, ceilings), METER_REASONS))
    # Several fields: each is judged, not only the first (a validator that returns early).
    edges = {name: dict(boundary_floats(ceiling)) for name, ceiling in ceilings.items()}
    every_ceiling = {name: as_float(bits["the ceiling: the largest float accepted"]) for name, bits in edges.items()}
    last = list(ceilings)[-1]
    one_over = {**every_ceiling, last: as_float(edges[last]["the smallest float above the ceiling"])}
    for label, payload in (("every field at its ceiling", every_ceiling), (f"every field at its ceiling but {last} just above", one_over)):
        found.append(Witness(METER, label, payload, spec_meter_verdict(payload, ceilings), METER_REASONS))
    for shape in (5, ["tokens", 1]):
        found.append(Witness(METER, f"{shape!r}: a payload that is not an object", shape,
                             spec_meter_verdict(shape, ceilings), METER_SHAPE_REASONS))
    return tuple(found)


def spec_quota_verdict(payload: Any, limit: int) -> bool:
    """spec/refusals.toml invalid-quota: refused when there is "no reason, or a reason that
    is not a string of at most 1024 characters". A character is a Unicode code point
    (Python's len; lone surrogates never get this far: they are not JSON text). A JS
    kernel checking `reason.length` counts UTF-16 code units instead, so it refuses
    every reason of 513 to 1024 astral characters (U+10000 and up, emoji) the spec
    accepts: a real cross-language hazard, pinned by the witnesses below. Nor is a
    character a grapheme: 'e' + U+0301 is two characters."""
    reason = payload.get("reason") if isinstance(payload, dict) else None
    return isinstance(reason, str) and len(reason) <= limit


@cache
def quota_witnesses() -> tuple[Witness, ...]:
    limit = vocabulary().emit_guard.quota_reason_max
    half = limit // 2 + 1  # the fewest astral characters whose UTF-16 length exceeds the limit
    cases: list[tuple[str, Any, frozenset[str]]] = [
        ("an empty reason", {"reason": ""}, QUOTA_REASONS),
        (f"{limit} characters", {"reason": "r" * limit}, QUOTA_REASONS),
        (f"{limit + 1} characters", {"reason": "r" * (limit + 1)}, QUOTA_REASONS),
        (f"{half} astral characters ({2 * half} UTF-16 units)", {"reason": ASTRAL * half}, QUOTA_REASONS),
        (f"{limit} astral characters ({2 * limit} UTF-16 units)", {"reason": ASTRAL * limit}, QUOTA_REASONS),
        (f"{limit + 1} astral characters", {"reason": ASTRAL * (limit + 1)}, QUOTA_REASONS),
        (f"{half} graphemes e+U+0301 ({2 * half} characters)", {"reason": "e\u0301" * half}, QUOTA_REASONS),
        ("a number as the reason", {"reason": 5}, QUOTA_REASONS),
        ("a null reason", {"reason": None}, QUOTA_REASONS),
        ("no reason", {}, QUOTA_REASONS),
        ("a payload that is not an object", "over quota", QUOTA_SHAPE_REASONS),
    ]
    return tuple(Witness(QUOTA, label, payload, spec_quota_verdict(payload, limit), reasons)
                 for label, payload, reasons in cases)


def all_witnesses() -> tuple[Witness, ...]:
    return meter_witnesses() + quota_witnesses()


# -- replaying witnesses on a validator -------------------------------------------------

@dataclass(frozen=True)
class Mismatch:
    witness: Witness
    outcome: str  # what the validator did: "accepted", "refused: ...", "raised ..."

    def __str__(self) -> str:
        expected = "accepts" if self.witness.accepted else "refuses"
        return f"{self.witness.label}: the spec {expected} it; the validator {self.outcome}"


MeterValidator = Callable[[Any, Mapping[str, float]], "str | None"]
QuotaValidator = Callable[[Any, int], "str | None"]


def _replay(witnesses: Iterable[Witness], judge: Callable[[Any], "str | None"]) -> list[Mismatch]:
    mismatches = []
    for witness in witnesses:
        try:
            problem = judge(witness.payload)
        except Exception as exc:  # noqa: BLE001 - a validator that raises on a witness has failed it
            mismatches.append(Mismatch(witness, f"raised {type(exc).__name__}: {exc}"))
            continue
        if (problem is None) != witness.accepted:
            mismatches.append(Mismatch(witness, "accepted it" if problem is None else f"refused it ({problem})"))
    return mismatches


def check_meter_validator(validator: MeterValidator = meter_problem,
                          witnesses: Iterable[Witness] | None = None) -> list[Mismatch]:
    """Every meter witness, NaN and infinities included, on `validator(payload, ceilings)`
    with the float ceilings an implementation reads from the spec."""
    ceilings = vocabulary().emit_guard.meter_ceilings
    return _replay(meter_witnesses() if witnesses is None else witnesses, lambda payload: validator(payload, ceilings))


def check_quota_validator(validator: QuotaValidator = quota_problem,
                          witnesses: Iterable[Witness] | None = None) -> list[Mismatch]:
    limit = vocabulary().emit_guard.quota_reason_max
    return _replay(quota_witnesses() if witnesses is None else witnesses, lambda payload: validator(payload, limit))


def main() -> None:
    started = time.perf_counter()
    for proof in emit_guard_proofs():
        verdict = {True: "proved", False: "REFUTED", None: "unknown"}[proof.proved]
        print(f"{verdict:8} {proof.seconds:6.2f}s  {proof.name}" + (f"  {proof.counterexample}" if proof.counterexample else "")
              + (f"  ({proof.detail})" if proof.detail else ""))
    witnesses = all_witnesses()
    print(f"{len(witnesses)} witnesses ({sum(w.expressible for w in witnesses)} expressible in a flow program), "
          f"{time.perf_counter() - started:.2f}s in all")
    for mismatch in check_meter_validator() + check_quota_validator():
        print(f"reference: {mismatch}")


if __name__ == "__main__":
    main()
