"""The values the store kit writes and expects (ROUND_TRIP_VALUES, NOT_JSON_VALUES, a Hypothesis
strategy of JSON), and its assertions: a value of the same JSON kinds all the way down, a log
of exactly the events given."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from loomcheck.reference.events import JSON, Event


def assert_same_json(actual: JSON, expected: JSON, where: str = "payload") -> None:
    """Equal *and* of the same JSON kinds all the way down: `==` alone would let a
    store hand back 1 for True or 1 for 1.0, which is not what it was given."""
    assert type(actual) is type(expected), f"{where}: got {actual!r} ({type(actual).__name__}), expected {expected!r}"
    if isinstance(expected, dict):
        assert set(actual) == set(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key, value in expected.items():
            assert_same_json(actual[key], value, f"{where}[{key!r}]")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            assert_same_json(got, want, f"{where}[{index}]")
    else:
        assert actual == expected, f"{where}: got {actual!r}, expected {expected!r}"


def assert_events(actual: list[Event], execution_id: str, expected: list[tuple[int, str, JSON]]) -> None:
    """`actual` is exactly the events `(seq, type, payload)` of `execution_id`, in order."""
    assert [(e.execution_id, e.seq, e.type) for e in actual] == [(execution_id, s, t) for s, t, _ in expected]
    for event, (seq, _, payload) in zip(actual, expected):
        assert isinstance(event, Event), f"{event!r} is not an Event"
        assert event.id == f"{execution_id}:{seq}"
        assert_same_json(event.payload, payload, f"{event.id} payload")


def json_values(max_leaves: int = 6) -> st.SearchStrategy[JSON]:
    """Hypothesis strategy for JSON values as stores must accept them."""
    leaves = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**53), max_value=2**53)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8)
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=max_leaves,
    )


class _Opaque:
    """An object json cannot serialise."""


def unserialisable_cycle() -> list[Any]:
    value: list[Any] = []
    value.append({"self": value})
    return value


# Values every store must keep exactly: (pytest id, value).
ROUND_TRIP_VALUES: list[tuple[str, JSON]] = [
    ("null", None),
    ("empty-object", {}),
    ("empty-array", []),
    ("empty-string", ""),
    ("zero", 0),
    ("false", False),
    ("true", True),
    ("float-one", 1.0),
    ("float-tenth", 0.1),
    ("float-huge", 1e300),
    ("float-tiny", -2.5e-300),
    ("int-2^53", 2**53),
    ("int-minus-2^53", -(2**53)),
    ("int-2^53-1", 2**53 - 1),
    ("null-in-array", [None, None]),
    ("null-in-object", {"a": None}),
    ("nested", {"a": [1, {"b": [None, True, "x", {"c": {}}]}], "d": {"e": [[], [[]]]}}),
    ("unicode-bmp", "héllo wörld ünïcode 世界 ✓"),
    ("unicode-astral", "𝄞 😀 𠜎 \U0010ffff"),
    ("nul-char", "a\x00b\x00"),
    ("control-chars", "\t\n\r\x01\x1f\x7f\u2028\u2029"),
    ("unicode-keys", {"ключ": 1, "😀": [2], "\x00": "nul key", "": "empty key"}),
    ("json-lookalike-string", '{"a": null}'),
    ("string-null", "null"),
]


# Values no store may accept: (pytest id, value).
NOT_JSON_VALUES: list[tuple[str, Any]] = [
    ("nan", math.nan),
    ("inf", math.inf),
    ("minus-inf", -math.inf),
    ("nan-nested", {"a": [1, math.nan]}),
    ("set", {1, 2}),
    ("int-keyed-dict", {1: "one"}),
    ("int-key-nested", {"a": [{"b": {2: "two"}}]}),
    ("tuple-keyed-dict", {(1, 2): "pair"}),
    ("object", _Opaque()),
    ("bytes", b"bytes"),
]
