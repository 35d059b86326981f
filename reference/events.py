"""The event envelope and the JSON discipline every store applies to payloads."""

from __future__ import annotations

import copy
import json
from typing import Any, NamedTuple

import orjson

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


def copy_json(value: JSON) -> JSON:
    """A deep copy of a JSON value: new dicts and lists, shared scalars (immutable).
    Several times faster than copy.deepcopy, which the fold would otherwise spend most
    of its time in; anything that is not JSON falls back to copy.deepcopy."""
    kind = type(value)
    if kind in _SCALARS:  # the commonest case first: most payload values are scalars
        return value
    if kind is dict:
        return {key: item if type(item) in _SCALARS else copy_json(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _SCALARS else copy_json(item) for item in value]
    return copy.deepcopy(value)


def to_plain_json(value: JSON) -> JSON:
    """A deep copy through JSON text: what a store would hand back. Raises NotJson
    for anything a store would refuse, so the kernel refuses it before appending."""
    try:
        text = dumps(value)
    except RecursionError:
        raise NotJson("nested too deeply") from None
    check_keys_are_strings(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise NotJson(f"not valid Unicode text ({exc.reason})") from None
    return loads(text)


def check_keys_are_strings(value: JSON) -> None:
    # json.dumps silently turns int keys into strings; a round trip would change the value.
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise NotJson(f"object key {key!r} is not a string")
                stack.append(sub)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
