"""Canonical JSON read from spec/canonical-json.md alone, and the pair CrossHair
compares it with spec/canonical.py on (symbolic/contracts.py). Straightforward on
purpose: recursive (after an iterative depth check, as the spec allows), a separate
shortest-digits search, its own escape table (docs/model-checking.md#crosshair)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Union

from loomcheck.spec.canonical import CanonicalError, canonical_json

SPEC_MAX_DEPTH = 1024
SPEC_MAX_INT = 9007199254740991
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class SpecRefused(ValueError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _spec_depth(value: object) -> int:
    deepest, todo = 0, [(value, 0)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, list):
            children = list(node)
        elif isinstance(node, dict):
            children = list(node.values())
        else:
            continue
        if level + 1 > SPEC_MAX_DEPTH:
            return level + 1
        deepest = max(deepest, level + 1)
        todo.extend((child, level + 1) for child in children)
    return deepest


def _spec_string(text: str) -> str:
    out = []
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            raise SpecRefused("lone-surrogate")
        if char in _SHORT:
            out.append(_SHORT[char])
        elif ord(char) < 0x20:
            out.append("\\u00" + "0123456789abcdef"[ord(char) >> 4] + "0123456789abcdef"[ord(char) & 15])
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _spec_digits(x: float) -> tuple[str, int]:
    """Shortest digits s and n with x == 0.s * 10**n (spec step 4): for the first
    precision at which some decimal reads back as x, the one closest to x (ties:
    the even one, as ECMA-262 says). The correctly rounded %e form alone is not
    enough: at 2**-24 the 16-digit tie rounds to ...062, which reads back as
    another double, while ...063 reads back as x. (This implementation's first
    cut did exactly that: CrossHair pointed at -2**-24, and Hypothesis's floats()
    reproduced it on plain values.)"""
    exact = Fraction(x)
    for precision in range(1, 18):
        mantissa, exponent = f"{x:.{precision - 1}e}".split("e")
        digits, scale = int(mantissa.replace(".", "")), int(exponent) - (precision - 1)
        candidates = [m for m in (digits - 1, digits, digits + 1)
                      if len(str(m)) == precision and float(f"{m}e{scale}") == x]
        if candidates:
            best = min(candidates, key=lambda m: (abs(Fraction(m) * Fraction(10) ** scale - exact), m % 2))
            text = str(best).rstrip("0")
            return text, scale + precision
    raise AssertionError("17 digits always round-trip a double")


def _spec_number(x: float) -> str:
    if x != x or x in (math.inf, -math.inf):
        raise SpecRefused("not-json")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    s, n = _spec_digits(abs(x))
    k = len(s)
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + s
    e = n - 1
    return sign + s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def _utf16_units(name: str) -> list[int]:
    units = []
    for char in name:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            units += [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]
        else:
            units.append(code)
    return units


def _spec_value(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        if -SPEC_MAX_INT <= value <= SPEC_MAX_INT:
            return str(value)
        raise SpecRefused("integer-range")
    if type(value) is float:
        return _spec_number(value)
    if type(value) is str:
        return _spec_string(value)
    if type(value) is list:
        return "[" + ",".join(_spec_value(item) for item in value) + "]"
    if type(value) is dict:
        for name in value:
            if type(name) is not str:
                raise SpecRefused("not-json")
            _spec_string(name)  # a name with a lone surrogate is refused before sorting
        names = sorted(value, key=_utf16_units)
        return "{" + ",".join(_spec_string(name) + ":" + _spec_value(value[name]) for name in names) + "}"
    raise SpecRefused("not-json")


def spec_canonical_text(value: object) -> str:
    if _spec_depth(value) > SPEC_MAX_DEPTH:
        raise SpecRefused("too-deep")
    return _spec_value(value)


# The values CrossHair generates for the canonical pair: every scalar type, an
# array and an object (the two containers' own rules: order kept, names sorted).
Scalar = Union[None, bool, int, float, str]
JsonLike = Union[Scalar, list[Scalar], dict[str, Scalar]]


def as_doubles(value: JsonLike) -> JsonLike:
    """The value with every float made concrete (repr realizes a symbolic one).
    CrossHair models a float as a real number; both canonicalisers print it with
    repr or %e, which realize it anyway, so its layout is explored by chosen
    values, not solved for: no float-layout mutant (exponent without "+", the
    tie next to 2**-24) was found in 35 s either way. Realizing first spends the
    paths on names, strings and ints instead (the DEL-escape mutant: 16 paths
    with this, 191 without)."""
    if isinstance(value, float):
        return float(repr(value))
    if isinstance(value, list):
        return [as_doubles(item) for item in value]
    if isinstance(value, dict):
        return {name: as_doubles(item) for name, item in value.items()}
    return value


def canonical_reference(value: JsonLike) -> str:
    """spec/canonical.py's text, or "refused:<reason>"."""
    try:
        return canonical_json(as_doubles(value))
    except CanonicalError as refused:
        return "refused:" + refused.reason


def canonical_spec(value: JsonLike) -> str:
    """The text by spec_canonical_text, or "refused:<reason>"."""
    try:
        return spec_canonical_text(as_doubles(value))
    except SpecRefused as refused:
        return "refused:" + refused.reason
