"""The emit guard's meter sentence (ADR 0104 D1: "a finite number in [0, ceiling]") in
z3's Float64 theory, the spec's ceilings as exact literals, and float bit patterns
(docs/model-checking.md#the-emit-guard-in-z3)."""

from __future__ import annotations

import struct
import tomllib
from decimal import Decimal
from fractions import Fraction
from functools import cache
from typing import Callable

import z3

from loomcheck.spec.files import SPEC_ROOT

TIMEOUT_MS = 10_000  # per solver call: a proof that needs longer reports unknown, not proved
F64 = z3.Float64()


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


def exact_real(value: Fraction) -> z3.ArithRef:
    return z3.Q(value.numerator, value.denominator)


def ceiling_float(ceiling: Fraction) -> z3.FPRef:
    """The float a kernel compares with: the literal rounded to nearest, as TOML and JSON parsers do."""
    return z3.fpToFP(z3.RNE(), exact_real(ceiling), F64)


def spec_accepts(x: z3.FPRef, ceiling: z3.FPRef) -> z3.BoolRef:
    """ADR 0104 D1, word for word: "a finite number in [0, ceiling]". IEEE comparison
    is exact, so with the ceiling exactly one float (proof b) this is the sentence
    over the reals; -0.0 >= 0 holds, as it should: -0 is the number 0."""
    return z3.And(z3.Not(z3.fpIsNaN(x)), z3.Not(z3.fpIsInf(x)),
                  z3.fpGEQ(x, z3.FPVal(0.0, F64)), z3.fpLEQ(x, ceiling))


Acceptor = Callable[[z3.FPRef, z3.FPRef], z3.BoolRef]


def as_float(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def bits_of(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def float_term(value: float) -> z3.FPRef:
    """A Python float as a z3 constant, through its bit pattern so nothing rounds."""
    return z3.fpBVToFP(z3.BitVecVal(bits_of(value), 64), F64)
