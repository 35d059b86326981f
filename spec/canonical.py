"""The canonical JSON text of a value (RFC 8785) and its view digest (ADR 0117 D1), the
reference implementation of spec/canonical-json.md and its vectors. Standard library only,
no recursion: docs/spec-data.md, "Canonical JSON and the view digest"."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Optional, Union

MAX_DEPTH = 1024                 # ADR 0117 D1: a proposal nested deeper is refused
MAX_SAFE_INTEGER = 2**53 - 1     # ECMAScript Number.MAX_SAFE_INTEGER
DIGEST_PREFIX = "v2:"            # ADR 0117 D1 review round 1: v1 was 64-bit FNV

REASONS = ("too-deep", "not-json", "lone-surrogate", "integer-range")


class CanonicalError(ValueError):
    """A value that has no canonical JSON text. `reason` is one of REASONS, `path`
    the JSON pointer (RFC 6901, "" for the whole value) of the offending part."""

    def __init__(self, reason: str, path: str = "", detail: str = "") -> None:
        self.reason = reason
        self.path = path
        self.detail = detail or reason
        super().__init__(f"{_shown(path)}: {self.detail} ({reason})")


# A path is built only when an error needs it: a linked chain (parent path,
# member name or index) costs O(1) per member, a string per member O(depth).
_Path = Optional[tuple[object, Union[str, int]]]
_Frame = tuple[object, _Path, int]   # (value, where it is, how many containers enclose it)


def canonical_json(value: object, max_depth: int = MAX_DEPTH) -> str:
    """The RFC 8785 text of `value`, or CanonicalError. Iterative: the stack
    holds output text (str) still to emit and values (_Frame) still to write."""
    out: list[str] = []
    stack: list[str | _Frame] = [(value, None, 0)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        node, path, level = item
        if isinstance(node, (dict, list)):
            if level + 1 > max_depth:  # the container itself is level + 1 deep
                raise CanonicalError("too-deep", _pointer(path), f"nested deeper than {max_depth} arrays/objects")
            pieces = _object(node, path, level + 1) if isinstance(node, dict) else _array(node, path, level + 1)
            stack.extend(reversed(pieces))
        else:
            out.append(_scalar(node, path))
    return "".join(out)


def view_digest(value: object) -> str:
    """ADR 0117 D1: "v2:" + 64 lowercase hex digits of SHA-256 over the UTF-8
    canonical text. (A parked "v1:" digest is matched by echo, never computed.)"""
    return DIGEST_PREFIX + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def depth(value: object) -> int:
    """How deeply arrays/objects nest: a scalar is 0, [] and {} are 1, [[0]] is 2.
    Counting stops past MAX_DEPTH: anything deeper (a value that contains itself
    included) is reported as MAX_DEPTH + 1, so this always terminates."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            level += 1
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return MAX_DEPTH + 1
            stack.extend((child, level) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _object(node: dict[object, object], path: _Path, level: int) -> list[str | _Frame]:
    if not node:
        return ["{}"]
    members: list[tuple[str, object]] = []
    for key, child in node.items():  # names are checked before sorting: UTF-16 cannot hold a surrogate
        if not isinstance(key, str):
            raise CanonicalError("not-json", _pointer(path), f"member name {_brief(key)} is not a string")
        _check_text(key, path, "member name")
        members.append((key, child))
    # RFC 8785 3.2.3: names sort by their UTF-16 code units, which is JavaScript's
    # `<` on strings; Python's code-point order differs for U+E000..U+FFFF vs astral.
    members.sort(key=lambda member: member[0].encode("utf-16-be"))
    pieces: list[str | _Frame] = []
    for index, (key, child) in enumerate(members):
        pieces.append(("{" if index == 0 else ",") + _quote(key) + ":")
        pieces.append((child, (path, key), level))
    pieces.append("}")
    return pieces


def _array(node: list[object], path: _Path, level: int) -> list[str | _Frame]:
    if not node:
        return ["[]"]
    pieces: list[str | _Frame] = []
    for index, child in enumerate(node):
        pieces.append("[" if index == 0 else ",")
        pieces.append((child, (path, index), level))
    pieces.append("]")
    return pieces


def _scalar(node: object, path: _Path) -> str:
    if node is None:
        return "null"
    if isinstance(node, bool):  # before int: bool is an int subclass, but JSON's true is not 1
        return "true" if node else "false"
    if isinstance(node, int):
        return _integer(int(node), path)
    if isinstance(node, float):
        return _number(float(node), path)
    if isinstance(node, str):
        _check_text(node, path, "string")
        return _quote(node)
    raise CanonicalError("not-json", _pointer(path), f"{_brief(node)} is not a JSON value")


def _integer(number: int, path: _Path) -> str:
    # A departure from RFC 8785, which would round to the nearest double: a JS UI's
    # JSON.parse rounds too, so kernel and UI would agree on a digest of a number
    # the kernel does not hold. Refusing fails closed instead.
    if -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
        return str(number)  # exact as a double, and ES prints integers below 1e21 in full
    raise CanonicalError("integer-range", _pointer(path),
                         f"integer {_brief(number)} is outside ±(2**53 - 1); send it as a string")


def _number(number: float, path: _Path) -> str:
    """ECMA-262 Number::toString, which RFC 8785 3.2.2.3 adopts."""
    if math.isnan(number) or math.isinf(number):
        raise CanonicalError("not-json", _pointer(path), f"{number!r} is not a JSON number")
    if number == 0:
        return "0"  # -0.0 included: ES prints -0 as "0"
    digits, exponent = _shortest(abs(number))
    return ("-" if number < 0 else "") + _layout(digits, exponent)


def _shortest(number: float) -> tuple[str, int]:
    """(digits, n) with number == 0.<digits> * 10**n and as few digits as round-trip.
    repr() already finds them (shortest, and the closest when several are shortest,
    as ES's Note 2 asks); only its layout differs from ECMAScript's."""
    mantissa, _, exp = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    significant = (whole + fraction).lstrip("0")
    digits = significant.rstrip("0")
    scale = (int(exp) if exp else 0) - len(fraction) + (len(significant) - len(digits))
    return digits, len(digits) + scale  # value == int(digits) * 10**scale


def _layout(digits: str, n: int) -> str:
    """The layout cases of ES Number::toString, for k = len(digits) significant digits."""
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)                  # 1e20 -> 100000000000000000000
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]           # 123.456
    if -6 < n <= 0:
        return "0." + "0" * -n + digits                # 0.000001
    exponent = n - 1
    sign = "+" if exponent >= 0 else "-"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{sign}{abs(exponent)}"         # 1e+21, 1.23e-7


# JSON.stringify's escapes (ECMA-262 QuoteJSONString), which RFC 8785 3.2.2.2 adopts:
# the two-character forms where JSON has one, \u00xx (lowercase) for the other
# C0 controls, and every other character (DEL, U+2028, non-ASCII) as itself.
_ESCAPES: dict[int, str] = {code: f"\\u{code:04x}" for code in range(0x20)}
_ESCAPES.update({ord("\b"): "\\b", ord("\t"): "\\t", ord("\n"): "\\n", ord("\f"): "\\f", ord("\r"): "\\r",
                 ord('"'): '\\"', ord("\\"): "\\\\"})

# A Python str holds code points; one in the surrogate block is never half of a
# valid character (json.loads joins an escaped pair into one astral code point).
_SURROGATE = re.compile("[\ud800-\udfff]")


def _quote(text: str) -> str:
    return '"' + text.translate(_ESCAPES) + '"'


def _check_text(text: str, path: _Path, what: str) -> None:
    # RFC 8785 3.1 requires I-JSON (RFC 7493), whose 2.1 forbids surrogates; and
    # JSON.stringify would write \udxxx where UTF-8 cannot hold the code point.
    found = _SURROGATE.search(text)
    if found:
        raise CanonicalError("lone-surrogate", _pointer(path),
                             f"{what} has an unpaired surrogate U+{ord(found.group()):04X} at index {found.start()}")


def _pointer(path: _Path) -> str:
    """RFC 6901 JSON pointer of a lazily built path."""
    tokens: list[str] = []
    link: object = path
    while isinstance(link, tuple):
        link, token = link
        tokens.append(str(token).replace("~", "~0").replace("/", "~1"))
    return "".join("/" + token for token in reversed(tokens))


def _shown(pointer: str) -> str:
    """The pointer as a message shows it: surrogates escaped so it can be printed,
    and a pointer a thousand levels long cut in the middle."""
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", pointer) if pointer else "(root)"
    return text if len(text) <= 120 else f"{text[:60]}…{text[-50:]} ({pointer.count('/')} levels)"


def _brief(value: object) -> str:
    """A value named in a message without printing something huge (str() of an
    int over 4300 digits even raises)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"({'-' if value < 0 else ''}{value.bit_length()}-bit int)"
    if isinstance(value, (bool, int, float)) or value is None:
        return repr(value)
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", repr(value[:40]))
    return f"a {type(value).__name__}"
