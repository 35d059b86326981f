"""The event envelope and the JSON discipline every store applies to payloads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

JSON = Any  # a JSON value: None, bool, int, float (finite), str, list, dict[str, JSON]


@dataclass(frozen=True, slots=True)
class Event:
    """One fact in an execution's log. `seq` starts at 1 and is contiguous; the
    id is derived from (execution, seq), so it is deterministic."""

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


def loads(text: str) -> JSON:
    return json.loads(text)


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
