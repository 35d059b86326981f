"""The one payload discipline every store shares.

Each store turns a payload into JSON text the same way, so that what one store
refuses every store refuses, and what one store hands back every store hands
back. A store checks every entry of an append *before* it writes anything.
"""

from __future__ import annotations

from typing import Any

from loomcheck.reference.events import JSON, NotJson, check_json_shape, check_text, dumps
from loomcheck.reference.limits import SNAPSHOT_DEPTH, STORED_DEPTH
from loomcheck.reference.stores.base import StoreError


def encode_payload(payload: JSON, max_depth: int = STORED_DEPTH) -> str:
    """The JSON text stored for `payload`; raises StoreError if it has no exact JSON form,
    or nests deeper than `max_depth`: nothing stored is deeper than every reader can walk
    (reference/limits.py), whoever appended it.

    `dumps` runs first because it detects reference cycles; a key walk over a
    cyclic value would never end. The key walk then refuses non-string object
    keys, which `json.dumps` would quietly turn into strings, and counts the depth.
    Last, the text must be valid UTF-8 (no lone surrogates): a file-backed store
    cannot write anything else, so the in-memory store must not accept it either.
    """
    try:
        text = dumps(payload)
    except RecursionError:
        raise StoreError("payload is not JSON: nested too deeply") from None
    except NotJson as exc:
        raise StoreError(f"payload is not JSON: {exc}") from None
    _check_keys_are_strings(payload, max_depth)
    _check_utf8(text, "payload")
    return text


def encode_snapshot(state: JSON) -> str:
    """A folded state's text: a state may hold an event's payload STATE_WRAP levels down."""
    return encode_payload(state, SNAPSHOT_DEPTH)


def storable_id(execution_id: Any) -> bool:
    """Whether an execution id is text a store can key by. An id that is not names no
    execution: a read of it is empty, a write refused."""
    try:
        check_text(execution_id)
    except NotJson:
        return False
    return True


def check_id(execution_id: Any) -> str:
    if not storable_id(execution_id):
        raise StoreError(f"execution id {execution_id!r:.60} is not text a store can keep")
    return execution_id


def check_event_type(event_type: Any) -> str:
    """The event type, if it is a string a store can keep exactly; else StoreError.

    A TEXT column would turn the int 5 into the string "5", so a store that did
    not check would read back something other than what it was given.
    """
    if not isinstance(event_type, str):
        raise StoreError(f"event type {event_type!r} is not a string")
    _check_utf8(event_type, "event type")
    return event_type


def encode_entry(event_type: Any, payload: JSON) -> tuple[str, str]:
    """`(type, payload text)` for one append entry, checked as above."""
    return check_event_type(event_type), encode_payload(payload)


def _check_keys_are_strings(value: JSON, max_depth: int) -> None:
    """Refuse non-string object keys, which `json.dumps` would quietly turn into
    strings, and a value nested deeper than `max_depth`. Only called after `dumps`
    succeeded, so the value has no cycles."""
    try:
        check_json_shape(value, max_depth)
    except NotJson as exc:
        raise StoreError(f"payload is not JSON: {exc}") from None


def _check_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StoreError(f"{what} is not valid Unicode text: {exc.reason}") from None
