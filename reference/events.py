"""The event envelope and the JSON discipline every store applies to payloads."""

from __future__ import annotations

import copy
import json
from typing import Any, NamedTuple

import orjson

from loomcheck.reference.limits import STORED_DEPTH

JSON = Any  # a JSON value: None, bool, int, float (finite), str, list, dict[str, JSON]


class Event(NamedTuple):
    """One fact in an execution's log. `seq` starts at 1 and is contiguous; the
    id is derived from (execution, seq), so it is deterministic.

    A named tuple: immutable like a frozen dataclass, and about half the cost to
    build, which matters because every store read builds one per event (bench/fold.py)."""

    execution_id: str
    seq: int
    type: str
    payload: JSON

    @property
    def id(self) -> str:
        return f"{self.execution_id}:{self.seq}"

    def to_json(self) -> dict[str, JSON]:
        """The normalised form the harness compares: sequence, type, payload."""
        return {"seq": self.seq, "type": self.type, "payload": self.payload}


class NotJson(ValueError):
    """A value that has no exact JSON form (NaN, infinities, non-string keys, objects)."""


def dumps(value: JSON) -> str:
    """Compact, key-order-preserving JSON; refuses what JSON cannot carry."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise NotJson(str(exc)) from None


# orjson reads an integer beyond 64 bits as a float, silently; JSON (and the stdlib) keep it
# exact. Such an integer is a run of at least 19 digits, found by mapping every digit to "1"
# and everything else to "0" (one C pass; a regular expression costs five parses), and text
# holding one goes to the stdlib. A digit run inside a string only costs the slower parser.
_DIGITS_AS_ONES = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))
_LONG_RUN = b"1" * 19


def loads(text: str | bytes) -> JSON:
    """JSON text as written by `dumps`, read back exactly: orjson where it is exact, else the stdlib."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if _LONG_RUN in raw.translate(_DIGITS_AS_ONES):
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # the stdlib's own error, or its leniencies (NaN, lone surrogates)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_RECURSE = 48  # levels copy_json copies by recursion (two frames each); deeper is an explicit stack


def copy_json(value: JSON, _level: int = 0) -> JSON:
    """A deep copy of a JSON value: new dicts and lists, shared scalars (immutable).
    Several times faster than copy.deepcopy, which the fold would otherwise spend most
    of its time in; anything that is not JSON falls back to copy.deepcopy. Recursion
    only for the first levels: any depth copies, so no log can make the fold overflow."""
    kind = type(value)
    if kind in _SCALARS:  # the commonest case first: most payload values are scalars
        return value
    if _level >= _RECURSE:
        return _copy_with_a_stack(value)
    if kind is dict:
        return {key: item if type(item) in _SCALARS else copy_json(item, _level + 1) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else copy_json(item, _level + 1) for item in value]
    return copy.deepcopy(value)


def _copy_with_a_stack(value: JSON) -> JSON:
    """copy_json without recursion: each container is made empty, then filled in place
    (slots reserved in order, so an object keeps its key order)."""
    holder: list[JSON] = [None]
    stack: list[tuple[Any, Any, JSON]] = [(holder, 0, value)]
    while stack:
        parent, slot, node = stack.pop()
        kind = type(node)
        if kind is dict:
            parent[slot] = copied = dict.fromkeys(node)
            stack.extend((copied, key, item) for key, item in node.items())
        elif kind is list:
            parent[slot] = copied = [None] * len(node)
            stack.extend((copied, index, item) for index, item in enumerate(node))
        else:
            parent[slot] = node if kind in _SCALARS else copy.deepcopy(node)
    return holder[0]


class TooLarge(NotJson):
    """A JSON value past a bound: nested deeper, or longer, than the caller allows."""


def to_plain_json(value: JSON, max_depth: int = STORED_DEPTH, max_bytes: int | None = None) -> JSON:
    """A deep copy through JSON text: what a store would hand back. Raises NotJson
    for anything a store would refuse, so the kernel refuses it before appending,
    and TooLarge past `max_depth` containers or `max_bytes` of UTF-8 JSON text. The
    bounds are checked first, without recursion, so nothing recursive meets a deeper value."""
    check_json_shape(value, max_depth, max_bytes)
    try:
        text = dumps(value)
    except RecursionError:  # only a caller's own max_depth past the interpreter's stack
        raise TooLarge("nested too deeply") from None
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotJson(f"not valid Unicode text ({exc.reason})") from None
    if max_bytes is not None and len(encoded) > max_bytes:
        raise TooLarge(f"{len(encoded)} bytes of JSON text, more than {max_bytes}")
    return loads(text)


_CONTAINERS = (dict, list, tuple)


def check_json_shape(value: JSON, max_depth: int | None = None, max_bytes: int | None = None) -> None:
    """Object keys are strings (json.dumps would silently turn int keys into strings, and a
    round trip change the value), at most `max_depth` containers nest, and the JSON text
    is at most `max_bytes` long, counted low (a scalar is one byte, a string its length and
    quotes). With both bounds the walk ends on any value, one that contains itself included;
    with neither, only on a value json.dumps has already written. One pass in which only
    containers go on the stack; scalars are counted where they stand."""
    if not isinstance(value, _CONTAINERS):
        if max_bytes is not None and (len(value) + 2 if isinstance(value, str) else 1) > max_bytes:
            raise TooLarge(f"more than {max_bytes} bytes of JSON text")
        return
    deepest = max_depth if max_depth is not None else float("inf")
    budget = max_bytes if max_bytes is not None else float("inf")
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > deepest:
            raise TooLarge(f"nested deeper than {max_depth} arrays/objects")
        budget -= len(item) + 1 if item else 2  # the brackets and the commas between members
        if isinstance(item, dict):
            for key in item:
                if type(key) is not str and not isinstance(key, str):
                    raise NotJson(f"object key {key!r} is not a string")
                budget -= len(key) + 3
            children = item.values()
        else:
            children = item
        for sub in children:
            kind = type(sub)
            if kind is str:
                budget -= len(sub) + 2
            elif kind in _SCALARS:
                budget -= 1
            elif isinstance(sub, _CONTAINERS):
                stack.append((sub, level + 1))
            else:
                budget -= len(sub) + 2 if isinstance(sub, str) else 1
        if budget < 0:
            raise TooLarge(f"more than {max_bytes} bytes of JSON text")


def check_text(value: object, max_bytes: int | None = None) -> str:
    """`value` if it is text a store keeps exactly (an id, an event type, a flow id): a str,
    valid Unicode (no lone surrogate, which UTF-8 cannot hold), at most `max_bytes` of UTF-8.
    Else NotJson, or TooLarge past the bound."""
    if type(value) is not str:
        raise NotJson(f"{type(value).__name__}, not text")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotJson(f"not valid Unicode text ({exc.reason})") from None
    if max_bytes is not None and len(encoded) > max_bytes:
        raise TooLarge(f"{len(encoded)} bytes of text, more than {max_bytes}")
    return value
