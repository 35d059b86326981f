"""The z3 layer for the emit guard (ADR 0104 D1): the proofs hold for the
spec's ceilings and fail for hypothetical ones and broken encodings; the z3
witnesses are the boundaries Python's own float arithmetic names; the reference's
validators agree with the spec on every witness and broken validators do not; the
corpus passes the reference through the driver and catches kernel mutants."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Callable

import pytest
import z3

from loomcheck.contract.session import Session, hello_of
from loomcheck.corpora.emit_witnesses import CHECK, IDS, PATHS, run_emit_witnesses, sendable_witnesses
from loomcheck.reference import emitguard
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.symbolic.guard_proofs import (Proof, emit_guard_proofs, prove_accepted_set_is_interval,
                                             prove_ceiling_is_one_float, prove_integers_round_safely)
from loomcheck.symbolic.guards import (MeterValidator, QuotaValidator, boundary_floats, check_meter_validator,
                                       check_quota_validator, meter_witnesses, quota_witnesses)
from loomcheck.symbolic.meter_encoding import F64, Acceptor, as_float, ceiling_groups, spec_ceilings
from loomcheck.spec.vocabulary import vocabulary
from mutants import loose_meter, loose_quota

RULES = vocabulary().emit_guard
LIMIT = RULES.quota_reason_max


@pytest.fixture(scope="module")
def proofs() -> list[Proof]:
    return emit_guard_proofs()


# -- proofs -----------------------------------------------------------------------------

def test_every_proof_holds_for_the_spec_ceilings(proofs: list[Proof]) -> None:
    assert len(proofs) == 3 * len(ceiling_groups())
    for proof in proofs:
        assert proof.proved is True, proof  # unknown (a timeout) is not a pass


def test_the_exact_ceilings_are_the_spec_literals_and_the_reference_reads_the_same_floats() -> None:
    assert set(spec_ceilings()) == set(RULES.meter_ceilings)
    for name, ceiling in spec_ceilings().items():
        assert ceiling.denominator == 1 and float(ceiling) == RULES.meter_ceilings[name]


# Encodings a kernel might write instead of the sentence; each must fail the interval proof.
BROKEN_ENCODINGS: dict[str, tuple[Acceptor, Callable[[float], bool]]] = {
    # Python's `not (x < 0 or x > c)`: every comparison with NaN is false, so NaN passes.
    "not (x < 0 or x > c)": (lambda x, c: z3.Not(z3.Or(z3.fpLT(x, z3.FPVal(0.0, F64)), z3.fpGT(x, c))), math.isnan),
    "0 <= x < c": (lambda x, c: z3.And(z3.fpGEQ(x, z3.FPVal(0.0, F64)), z3.fpLT(x, c)), lambda v: v == 1e12),
    "0 < x <= c": (lambda x, c: z3.And(z3.fpGT(x, z3.FPVal(0.0, F64)), z3.fpLEQ(x, c)), lambda v: v == 0),
    "no sign bit": (lambda x, c: z3.And(z3.fpIsPositive(x), z3.fpLEQ(x, c)), lambda v: v == 0 and math.copysign(1, v) < 0),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_ENCODINGS))
def test_the_interval_proof_refutes_broken_encodings(broken: str) -> None:
    accepts, is_the_counterexample = BROKEN_ENCODINGS[broken]
    proof = prove_accepted_set_is_interval(broken, Fraction(10**12), accepts)
    assert proof.proved is False and proof.counterexample
    found = float(proof.counterexample.split(" ")[0])  # repr of the float, then its bits
    assert is_the_counterexample(found), proof.counterexample


def test_a_ceiling_that_is_not_a_float_is_refuted() -> None:
    for literal in (Fraction(1, 10), Fraction(2**53 + 1)):
        proof = prove_ceiling_is_one_float("hypothetical", literal)
        assert proof.proved is False and "is not a float" in (proof.counterexample or "")
    misread = prove_ceiling_is_one_float("misread", Fraction(10**12), [math.nextafter(1e12, math.inf)])
    assert misread.proved is False


def test_integer_rounding_is_refuted_for_a_ceiling_above_2_to_the_53() -> None:
    # 1e17 is a float (10**17 = 2**17 * 5**17), but floats near it are 16 apart:
    # float(n) accepts integers just above it. The proof is not vacuous.
    ceiling = 10**17
    proof = prove_integers_round_safely("hypothetical memBytes 1e17", Fraction(ceiling))
    assert proof.proved is False
    n = int(re.match(r"n = (-?\d+)", proof.counterexample or "").group(1))
    assert n > ceiling and float(n) <= float(ceiling)  # checked by Python, not by z3


# -- witnesses ------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(RULES.meter_ceilings))
def test_z3_boundaries_are_the_floats_python_names(name: str) -> None:
    ceiling = RULES.meter_ceilings[name]
    found = {label: as_float(bits) for label, bits in boundary_floats(spec_ceilings()[name])}
    assert found["the ceiling: the largest float accepted"] == ceiling
    assert found["the smallest float above the ceiling"] == math.nextafter(ceiling, math.inf)
    assert math.copysign(1, found["-0.0"]) == -1 and found["-0.0"] == 0
    assert math.copysign(1, found["+0.0"]) == 1 and found["+0.0"] == 0
    assert found["the smallest positive float (a subnormal)"] == math.nextafter(0.0, 1.0)
    assert found["the largest negative float (-subnormal)"] == math.nextafter(-0.0, -1.0)
    assert found["the largest finite float"] == math.nextafter(math.inf, 0.0)
    assert found["+infinity"] == math.inf and found["-infinity"] == -math.inf and math.isnan(found["NaN"])


def test_witness_verdicts_come_from_the_encoding() -> None:
    verdicts = {w.label.split(": ", 1)[1]: w.accepted for w in meter_witnesses() if w.label.startswith("tokens = ")}
    assert verdicts["the ceiling: the largest float accepted"] and verdicts["-0.0"] and verdicts["+0.0"]
    assert not any(verdicts[label] for label in ("the smallest float above the ceiling", "NaN", "+infinity", "-infinity",
                                                  "the largest negative float (-subnormal)", "the ceiling + 1, an integer",
                                                  "10**400, an integer float() cannot convert", "true"))
    quota = {w.label: w.accepted for w in quota_witnesses()}
    assert quota[f"{LIMIT} astral characters ({2 * LIMIT} UTF-16 units)"]  # characters are code points
    assert not quota[f"{LIMIT + 1} characters"]


def test_the_reference_validators_agree_with_the_spec_on_every_witness() -> None:
    assert check_meter_validator() == []
    assert check_quota_validator() == []


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def per_value(problem: Callable[[Any, float], bool]) -> MeterValidator:
    """A meter validator shaped like the reference's, judging each field with `problem`."""
    def validator(payload: Any, ceilings: Any) -> str | None:
        if not isinstance(payload, dict):
            return "not an object"
        for name, ceiling in ceilings.items():
            if name in payload and problem(payload[name], ceiling):
                return f"{name} is refused"
        return None
    return validator


def first_field_only(payload: Any, ceilings: Any) -> str | None:
    if not isinstance(payload, dict):
        return "not an object"
    for name, ceiling in ceilings.items():
        if name in payload:  # returns on the first field present, valid or not
            return emitguard.meter_problem({name: payload[name]}, {name: ceiling})
    return None


# (validator, a label fragment of the witness that must catch it)
METER_MUTANTS: dict[str, tuple[MeterValidator, str]] = {
    "forgets NaN": (per_value(lambda v, c: not _number(v) or v < 0 or v > c), "NaN"),
    "x < c": (per_value(lambda v, c: not _number(v) or not (0 <= float(v) < c)), "the ceiling"),
    "x > 0": (per_value(lambda v, c: not _number(v) or not (0 < float(v) <= c)), "-0.0"),
    "sign bit": (per_value(lambda v, c: not _number(v) or math.copysign(1, v) < 0 or not math.isfinite(float(v))
                           or float(v) > c), "-0.0"),
    "int(value)": (per_value(lambda v, c: not _number(v) or not (0 <= int(v) <= c)), "the smallest float above"),
    "bool is an int": (per_value(lambda v, c: not isinstance(v, (int, float)) or not (math.isfinite(float(v))
                                                                                       and 0 <= v <= c)), "true"),
    "float() unguarded": (per_value(lambda v, c: not _number(v) or not (math.isfinite(float(v)) and 0 <= float(v) <= c)),
                          "10**400"),
    "first field only": (first_field_only, "just above"),
}


@pytest.mark.parametrize("mutant", sorted(METER_MUTANTS))
def test_the_meter_witnesses_catch_broken_validators(mutant: str) -> None:
    validator, catcher = METER_MUTANTS[mutant]
    mismatches = check_meter_validator(validator)
    assert any(catcher in m.witness.label for m in mismatches), [str(m) for m in mismatches]


QUOTA_MUTANTS: dict[str, tuple[QuotaValidator, str]] = {
    # A JS kernel's reason.length: UTF-16 code units, two per astral character.
    "UTF-16 units": (lambda p, limit: None if isinstance(p, dict) and isinstance(p.get("reason"), str)
                     and len(p["reason"].encode("utf-16-le")) // 2 <= limit else "refused", "astral"),
    "UTF-8 bytes": (lambda p, limit: None if isinstance(p, dict) and isinstance(p.get("reason"), str)
                    and len(p["reason"].encode("utf-8")) <= limit else "refused", "astral"),
    "len >= limit": (lambda p, limit: None if isinstance(p, dict) and isinstance(p.get("reason"), str)
                     and len(p["reason"]) < limit else "refused", f"{LIMIT} characters"),
    "any reason": (lambda p, limit: None if isinstance(p, dict) and len(str(p.get("reason", ""))) <= limit
                   else "refused", "reason"),
}


@pytest.mark.parametrize("mutant", sorted(QUOTA_MUTANTS))
def test_the_quota_witnesses_catch_broken_validators(mutant: str) -> None:
    validator, catcher = QUOTA_MUTANTS[mutant]
    mismatches = check_quota_validator(validator)
    assert any(catcher in m.witness.label for m in mismatches), [str(m) for m in mismatches]


# -- the corpus, through the driver ----------------------------------------------------

def session_on(driver: ReferenceDriver, features: frozenset[str] | None = None) -> Session:
    return Session(driver, frozenset(hello_of(driver).features) if features is None else features)


def patched(meter: MeterValidator | None = None, quota: QuotaValidator | None = None) -> ReferenceDriver:
    """The reference with one validator swapped, the way tests/mutants/loose_meter.py does it."""
    class Patched(FlowContext):
        def emit(self, event_type: str, payload: Any, scope: Any = None) -> None:
            original = emitguard.meter_problem, emitguard.quota_problem
            emitguard.meter_problem, emitguard.quota_problem = meter or original[0], quota or original[1]
            try:
                return super().emit(event_type, payload, scope)
            finally:
                emitguard.meter_problem, emitguard.quota_problem = original

    return ReferenceDriver(store="memory", context_class=Patched)


def test_the_reference_passes_every_sendable_witness_both_ways() -> None:
    assert CHECK == "corpus:emit-witnesses"
    result = run_emit_witnesses(session_on(ReferenceDriver(store="memory")), tuple(IDS.values()))
    assert result.cases == len(PATHS) * len(sendable_witnesses()) > 0
    assert result.violations == [], [v.message for v in result.violations[:3]]


def test_nan_infinities_and_huge_integers_are_not_sendable() -> None:
    unsent = [w.label for w in meter_witnesses() if not w.expressible]
    assert unsent and all(any(k in label for k in ("NaN", "infinity", "10**400")) for label in unsent)


def test_the_corpus_catches_a_loose_meter() -> None:
    result = run_emit_witnesses(session_on(loose_meter.make()), tuple(IDS.values()))
    assert result.violations and {v.invariant for v in result.violations} == {IDS["RESOURCE_METERED"]}
    assert any("reached the log" in v.message for v in result.violations)
    assert result.operations and set(result.scripts) == {IDS["RESOURCE_METERED"]}  # each failure with its script


def test_each_validated_type_is_judged_by_its_own_invariant() -> None:
    """ADR 0104 D1: a loose quota check is a quota finding alone, and a corpus asked only for
    one invariant sends only that type's witnesses."""
    result = run_emit_witnesses(session_on(loose_quota.make()), tuple(IDS.values()))
    assert result.violations and {v.invariant for v in result.violations} == {IDS["QUOTA_EXCEEDED"]}
    meters_only = run_emit_witnesses(session_on(loose_quota.make()), (IDS["RESOURCE_METERED"],))
    assert meters_only.cases > 0 and meters_only.violations == []


def test_the_corpus_catches_over_refusal() -> None:
    strict, _ = METER_MUTANTS["x < c"]
    result = run_emit_witnesses(session_on(patched(meter=strict)), (IDS["RESOURCE_METERED"],))
    assert any("the spec accepts" in v.message and "invalid-meter" in v.message for v in result.violations)


def test_the_corpus_catches_a_kernel_counting_utf16_units() -> None:
    utf16, _ = QUOTA_MUTANTS["UTF-16 units"]
    result = run_emit_witnesses(session_on(patched(quota=utf16)), (IDS["QUOTA_EXCEEDED"],))
    assert result.violations and all("astral" in v.message for v in result.violations)


def test_a_kernel_without_the_emit_guard_is_not_judged() -> None:
    assert run_emit_witnesses(session_on(ReferenceDriver(store="memory"), frozenset()), tuple(IDS.values())).cases == 0
