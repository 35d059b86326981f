"""The canonical JSON and view digest of ADR 0117 D1: the published vectors,
the depth boundary, every refusal, and properties against independent oracles
(json.loads, json.dumps, an arithmetic UTF-16 order, the ECMAScript number grammar)."""

from __future__ import annotations

import enum
import hashlib
import json
import math
import random
import re
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loomcheck.spec.canonical import (MAX_DEPTH, MAX_SAFE_INTEGER, REASONS, CanonicalError, canonical_json, depth,
                                      view_digest)
from loomcheck.corpora.view_digests import nest  # the value a vector's `nest` generator describes
from loomcheck.spec.files import SPEC_ROOT, read_json

VECTORS_FILE = SPEC_ROOT / "vectors" / "view-digest.json"
DIGEST = re.compile(r"^v2:[0-9a-f]{64}$")




def _vectors() -> list[dict[str, Any]]:
    document = read_json(VECTORS_FILE)
    return [*document["vectors"], *document["numbers"]]


VECTORS = _vectors()


def _input(vector: dict[str, Any]) -> Any:
    spec = vector.get("nest")
    return nest(spec["kind"], spec["depth"], spec["leaf"], spec.get("key", "a")) if spec else vector["input"]


# --------------------------------------------------------------------------- the published vectors


@pytest.mark.parametrize("vector", VECTORS, ids=[v["description"][:60] for v in VECTORS])
def test_vector(vector: dict[str, Any]) -> None:
    """Every vector is what this module computes now, so the file cannot go stale."""
    value = _input(vector)
    if "refused" in vector:
        with pytest.raises(CanonicalError) as refusal:
            canonical_json(value)
        assert refusal.value.reason == vector["refused"]
        return
    text = canonical_json(value)
    if "canonical" in vector:
        assert text == vector["canonical"]
    # the file's digest is SHA-256 of its own canonical text, and the implementation agrees
    assert vector["digest"] == "v2:" + hashlib.sha256(text.encode("utf-8")).hexdigest() == view_digest(value)


def test_vectors_cover_every_reason_and_both_sides_of_the_depth_boundary() -> None:
    assert {v["refused"] for v in VECTORS if "refused" in v} == set(REASONS)
    nests = {(v["nest"]["kind"], v["nest"]["depth"], "refused" in v) for v in VECTORS
             if "nest" in v and v["nest"]["leaf"] == 0}
    for kind in ("array", "object"):
        assert {(kind, MAX_DEPTH, False), (kind, MAX_DEPTH + 1, True)} <= nests
    assert all(set(v) in ({"description", "input", "canonical", "digest"}, {"description", "input", "refused"},
                          {"description", "nest", "digest"}, {"description", "nest", "refused"}) for v in VECTORS)


def test_vectors_name_the_spec_and_the_spec_is_shipped() -> None:
    document = read_json(VECTORS_FILE)
    assert document["spec"] == "spec/canonical-json.md"
    assert "viewDigest" in (SPEC_ROOT / "canonical-json.md").read_text(encoding="utf-8")


def test_number_vectors_keep_their_literal_spelling() -> None:
    """The numbers sub-list is about how a parser's number is written: 1.0 must stay
    1.0 in the file (a float to Python) and still come out as 1."""
    text = VECTORS_FILE.read_text(encoding="utf-8")
    for literal in ('"input": 1.0,', '"input": 4.50,', '"input": 1E30,', '"input": -0.0,', '"input": 9007199254740992.0,'):
        assert literal in text
    assert canonical_json(json.loads("1.0")) == "1" and isinstance(json.loads("1.0"), float)


# --------------------------------------------------------------------------- depth


@pytest.mark.parametrize("kind", ["array", "object"])
def test_depth_1024_is_accepted(kind: str) -> None:
    value = nest(kind, MAX_DEPTH, 0)
    assert depth(value) == MAX_DEPTH
    text = canonical_json(value)
    assert text.startswith("[[" if kind == "array" else '{"a":{"a":') and text.count("0") == 1


@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100_000])
def test_deeper_is_refused_without_recursion_error(kind: str, levels: int) -> None:
    value = nest(kind, levels, 0)
    with pytest.raises(CanonicalError) as refusal:
        view_digest(value)
    assert refusal.value.reason == "too-deep"
    assert refusal.value.path.count("/") == MAX_DEPTH  # the first container past the limit
    assert depth(value) == MAX_DEPTH + 1


def test_depth_counts_containers_and_a_scalar_is_zero() -> None:
    assert [depth(v) for v in (0, "x", None, [], {}, [0], {"a": 0}, [[]], {"a": [{}]}, [0, [1, [2]], {}])] == \
        [0, 0, 0, 1, 1, 1, 1, 2, 3, 3]


def test_mixed_nesting_counts_arrays_and_objects_alike() -> None:
    def alternating(levels: int) -> Any:
        value: Any = "leaf"
        for level in range(levels):
            value = [value] if level % 2 else {"k": value}
        return value
    assert canonical_json(alternating(MAX_DEPTH)).count("leaf") == 1
    with pytest.raises(CanonicalError, match="too-deep"):
        canonical_json(alternating(MAX_DEPTH + 1))


def test_an_empty_leaf_container_is_a_level() -> None:
    canonical_json(nest("array", MAX_DEPTH - 1, []))
    with pytest.raises(CanonicalError, match="too-deep"):
        canonical_json(nest("array", MAX_DEPTH, {}))


def test_a_value_that_contains_itself_is_too_deep() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(CanonicalError) as refusal:
        canonical_json({"x": loop})
    assert refusal.value.reason == "too-deep"
    assert depth(loop) == MAX_DEPTH + 1


# --------------------------------------------------------------------------- refusals


class Colour(enum.IntEnum):
    RED = 3


@pytest.mark.parametrize("value", [{1, 2}, b"bytes", object(), (1, 2), {1: "a"}, {None: 1}, {("a",): 1},
                                   math.nan, math.inf, -math.inf, [1.0, math.nan], {"a": {"b": b""}}])
def test_not_json(value: Any) -> None:
    with pytest.raises(CanonicalError) as refusal:
        canonical_json(value)
    assert refusal.value.reason == "not-json"


@pytest.mark.parametrize("value", ["\ud800", "\udfff", "ok\udc00", "\ud83d\ude00", {"\ud800": 1}, [{"a": ["\udbff"]}]])
def test_lone_surrogate(value: Any) -> None:
    """Python spells an astral character as one code point; two surrogate code points
    (what json.loads never builds) are two unpaired halves, refused like one."""
    with pytest.raises(CanonicalError) as refusal:
        canonical_json(value)
    assert refusal.value.reason == "lone-surrogate"
    assert "unpaired surrogate U+D" in str(refusal.value)


@pytest.mark.parametrize("number", [MAX_SAFE_INTEGER + 1, -MAX_SAFE_INTEGER - 1, 2**64, -(2**200), 10**5000],
                         ids=["2**53", "-(2**53)", "2**64", "-(2**200)", "10**5000"])
def test_integer_range(number: int) -> None:
    with pytest.raises(CanonicalError) as refusal:
        canonical_json({"n": [number]})
    assert refusal.value.reason == "integer-range"
    assert refusal.value.path == "/n/0"
    assert len(str(refusal.value)) < 300  # a 5000-digit integer is described, not printed


def test_the_safe_integers_and_doubles_beyond_them_are_accepted() -> None:
    assert canonical_json([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]) == "[9007199254740991,-9007199254740991]"
    assert canonical_json(float(2**53)) == "9007199254740992"  # a double is a double: not range-checked
    assert canonical_json(2.0**70) == "1.1805916207174113e+21"


def test_the_message_names_the_place_as_a_json_pointer() -> None:
    with pytest.raises(CanonicalError) as refusal:
        canonical_json({"ok": 1, "a/b": [0, {"c~d": math.nan}]})
    assert refusal.value.path == "/a~1b/1/c~0d"
    assert str(refusal.value).startswith("/a~1b/1/c~0d: ") and str(refusal.value).endswith("(not-json)")
    with pytest.raises(CanonicalError, match=r"^\(root\): .*\(integer-range\)$"):
        canonical_json(2**53)
    assert CanonicalError("too-deep").reason == "too-deep"


def test_python_types_are_mapped_as_json_values() -> None:
    assert canonical_json([True, False, 1, 0, None]) == "[true,false,1,0,null]"  # bool is not int here
    assert canonical_json({"c": Colour.RED}) == '{"c":3}'  # an int subclass is its number, not its name
    assert canonical_json(OrderedDict([("b", 1), ("a", 2)])) == '{"a":2,"b":1}'
    assert canonical_json([-0.0, 1.0, 1e21, 1e-7, 123e-9, 0.000001, 100.0]) == \
        "[0,1,1e+21,1e-7,1.23e-7,0.000001,100]"


def test_a_large_integral_double_reads_back_as_an_integer_out_of_range() -> None:
    """ES writes 1e20 in full, as JSON.stringify does; a parser with integers (Python's)
    reads that text back as an int past 2**53 - 1, which is refused: re-parsed canonical
    text is not always canonicalisable. The spec says so; this pins it."""
    assert canonical_json(1e20) == "100000000000000000000"
    with pytest.raises(CanonicalError, match="integer-range"):
        canonical_json(json.loads(canonical_json(1e20)))
    assert canonical_json(json.loads(canonical_json(1e21))) == "1e+21"  # an exponent reads back as a float


def test_member_names_sort_by_utf16_code_units_not_code_points() -> None:
    value = {"\ue000": 1, "\U0001f600": 2}
    assert sorted(value) == ["\ue000", "\U0001f600"]  # Python's order ...
    assert canonical_json(value) == '{"\U0001f600":2,"\ue000":1}'  # ... is not JCS's


# --------------------------------------------------------------------------- properties

KEYS = st.text(alphabet=st.characters(blacklist_categories=("Cs",), max_codepoint=0x10FFFF), max_size=4)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# An integral double past 2**53 is written without fraction or exponent below 1e21,
# which json.loads reads back as an int out of range (pinned in the next section).
READABLE_FLOATS = FLOATS.filter(lambda x: not x.is_integer() or abs(x) <= MAX_SAFE_INTEGER)
SCALARS = (st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | READABLE_FLOATS
           | st.text(max_size=8))
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
                           max_leaves=16)
ASCII_INT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=4), inner, max_size=4),
    max_leaves=16)


@given(JSON_VALUES)
def test_canonical_text_parses_back_to_the_value(value: Any) -> None:
    assert json.loads(canonical_json(value)) == value


@given(JSON_VALUES)
def test_canonicalising_the_canonical_text_changes_nothing(value: Any) -> None:
    text = canonical_json(value)
    assert canonical_json(json.loads(text)) == text


def _reordered(value: Any, rnd: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {key: _reordered(child, rnd) for key, child in items}
    if isinstance(value, list):
        return [_reordered(child, rnd) for child in value]
    return value


@given(JSON_VALUES, st.randoms(use_true_random=False))
def test_insertion_order_of_members_does_not_matter(value: Any, rnd: random.Random) -> None:
    assert view_digest(_reordered(value, rnd)) == view_digest(value)


@given(ASCII_INT_VALUES)
def test_agrees_with_json_dumps_for_ascii_keys_and_integers(value: Any) -> None:
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _utf16_units(text: str) -> tuple[int, ...]:
    """Code units computed arithmetically (UTF-16, RFC 2781 2.1), not by a codec."""
    units: list[int] = []
    for char in text:
        point = ord(char)
        if point < 0x10000:
            units.append(point)
        else:
            units += [0xD800 + ((point - 0x10000) >> 10), 0xDC00 + ((point - 0x10000) & 0x3FF)]
    return tuple(units)


@given(st.dictionaries(KEYS, st.integers(0, 9), max_size=8))
def test_member_order_is_utf16_code_unit_order(value: dict[str, int]) -> None:
    order = list(json.loads(canonical_json(value), object_pairs_hook=lambda pairs: [k for k, _ in pairs]))
    assert order == sorted(value, key=_utf16_units)


ES_NUMBER = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?(e[+-][1-9][0-9]*)?$")


@given(FLOATS)
def test_numbers_round_trip_in_ecmascript_spelling(number: float) -> None:
    text = canonical_json(number)
    assert float(text) == number and ES_NUMBER.match(text)
    if "e" in text:  # ES uses an exponent exactly outside [1e-6, 1e21), with one digit before the point
        assert not 1e-6 <= abs(number) < 1e21 and re.match(r"^-?[1-9](\.|e)", text)
    else:
        assert number == 0 or 1e-6 <= abs(number) < 1e21
    assert len(text.replace("-", "").replace(".", "").split("e")[0].strip("0")) <= 17


@given(JSON_VALUES)
def test_the_digest_is_v2_and_64_lowercase_hex(value: Any) -> None:
    assert DIGEST.match(view_digest(value))
