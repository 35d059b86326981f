"""JSON on the wire, however deep. The suite sends values nested 1025 levels
deep (ADR 0117 D1's bound) and one 100 000 deep (spec/vectors/view-digest.json),
past what Python's recursive json module does on the main thread's stack. The
fast path is the json module as it is; a value too deep for it is (de)serialised
again in a thread with a large stack and a recursion limit to match.

What an implementation answers is read by `loads_answer` instead: strict UTF-8
and bounded in depth and size (docs/protocol.md), so no answer can take the
harness's stack or memory."""

from __future__ import annotations

import json
from typing import Any

from loomcheck.spec.files import deep_json, json_headroom



def dumps(value: Any) -> bytes:
    """ASCII JSON: a lone surrogate (the hostile-names corpus sends '\\ud800') has no
    UTF-8 form, but its \\u escape is JSON that every parser reads back the same."""
    def encode() -> bytes:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    return deep_json(encode)


def loads(data: bytes | str) -> Any:
    """Strict JSON: NaN and Infinity are not JSON."""
    return deep_json(lambda: json.loads(data, parse_constant=_no_constants))


class TooDeep(ValueError):
    """JSON, but beyond the bound on an answer's depth or size (docs/protocol.md)."""


def loads_answer(line: bytes, max_depth: int, max_values: int) -> Any:
    """An implementation's answer, read as bounded data before anything else looks at
    it: strict UTF-8 (json.loads of bytes would guess UTF-16 or UTF-32 and take it),
    strict JSON, at most `max_depth` arrays/objects deep and `max_values` values.
    ValueError says why not; TooDeep when only the bound is exceeded."""
    text = _utf8(line)
    try:
        # The parser recurses once per level: past this headroom it stops with a
        # RecursionError, long before the main thread's stack is at risk.
        with json_headroom(max_depth + 64):
            value = json.loads(text, parse_constant=_no_constants)
    except RecursionError:
        raise TooDeep(f"the answer is nested deeper than {max_depth} arrays/objects") from None
    problem = _beyond(value, max_depth, max_values)
    if problem:
        raise TooDeep(f"the answer {problem}")
    return value


def _utf8(line: bytes) -> str:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    if "\x00" in text:  # no JSON text holds a NUL; UTF-16 and UTF-32 hold one in every ASCII character
        raise ValueError("not UTF-8: it holds NUL bytes (UTF-16 or UTF-32?)")
    if text.startswith("\ufeff"):
        raise ValueError("begins with a byte order mark, which JSON text must not (RFC 8259 8.1)")
    return text


def _beyond(value: Any, max_depth: int, max_values: int) -> str | None:
    """What exceeds the bounds, or None; iterative, so any depth is safe to walk."""
    count = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        count += 1
        if count > max_values:
            return f"holds more than {max_values} JSON values"
        if isinstance(node, (dict, list)):
            if level + 1 > max_depth:  # the container itself is level + 1 deep
                return f"is nested deeper than {max_depth} arrays/objects"
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return None


def depth(value: Any) -> int:
    """How many arrays/objects deep a value nests (a scalar: 0); iterative."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, level + 1)
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
