"""The emit guard's boundary witnesses (ADR 0104 D1): meter and quota payloads at every
edge of the accepted set, each with the spec encoding's verdict (z3 solves the boundary
floats), and their replay on a validator, the reference's by default. The witnesses are
the corpus:emit-witnesses corpus every run sends through the driver
(docs/model-checking.md#the-emit-guard-in-z3).

Run `python -m loomcheck.symbolic.guards` to print every proof with its time, the
witnesses, and the reference validators' disagreements."""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any, Callable, Iterable, Mapping

import z3

from loomcheck.reference.emitguard import meter_problem, quota_problem
from loomcheck.spec.canonical import MAX_SAFE_INTEGER, CanonicalError, canonical_json
from loomcheck.spec.vocabulary import vocabulary
from loomcheck.symbolic.guard_proofs import emit_guard_proofs
from loomcheck.symbolic.meter_encoding import (F64, TIMEOUT_MS, as_float, ceiling_float, exact_real, float_term,
                                               spec_accepts, spec_ceilings)

METER, QUOTA = "RESOURCE_METERED", "QUOTA_EXCEEDED"
METER_REASONS = frozenset({"invalid-meter"})
QUOTA_REASONS = frozenset({"invalid-quota"})
# A payload that is not an object: spec/refusals.toml names it under invalid-emit ("an
# allow-listed kernel type whose payload is not an object") while the reference says
# invalid-meter / invalid-quota; both are the emit guard refusing, so either is taken.
METER_SHAPE_REASONS = frozenset({"invalid-emit", "invalid-meter"})
QUOTA_SHAPE_REASONS = frozenset({"invalid-emit", "invalid-quota"})
ASTRAL = "\N{GRINNING FACE}"  # U+1F600: one character (code point), two UTF-16 code units


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
        claim = z3.And(z3.IntVal(value) >= 0, z3.ToReal(z3.IntVal(value)) <= exact_real(ceiling))
    else:
        claim = spec_accepts(float_term(value), ceiling_float(ceiling))
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
