"""The one payload discipline every store shares.

Each store turns a payload into JSON text the same way, so that what one store
refuses every store refuses, and what one store hands back every store hands
back. A store checks every entry of an append *before* it writes anything.
"""

from __future__ import annotations

from typing import Any

from loomcheck.reference.events import JSON, NotJson, check_keys_are_strings, dumps
from loomcheck.reference.stores.base import StoreError


def encode_payload(payload: JSON) -> str:
    """The JSON text stored for `payload`; raises StoreError if it has no exact JSON form.

    `dumps` runs first because it detects reference cycles; a key walk over a
    cyclic value would never end. The key walk then refuses non-string object
    keys, which `json.dumps` would quietly turn into strings. Last, the text must
    be valid UTF-8 (no lone surrogates): a file-backed store cannot write
    anything else, so the in-memory store must not accept it either.
    """
    try:
        text = dumps(payload)
    except RecursionError:
        raise StoreError("payload is not JSON: nested too deeply") from None
    except NotJson as exc:
        raise StoreError(f"payload is not JSON: {exc}") from None
    _check_keys_are_strings(payload)
    _check_utf8(text, "payload")
    return text


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


def _check_keys_are_strings(value: JSON) -> None:
    """Refuse non-string object keys, which `json.dumps` would quietly turn into
    strings. Only called after `dumps` succeeded, so the value has no cycles."""
    try:
        check_keys_are_strings(value)
    except NotJson as exc:
        raise StoreError(f"payload is not JSON: {exc}") from None


def _check_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StoreError(f"{what} is not valid Unicode text: {exc.reason}") from None
