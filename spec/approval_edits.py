"""The tampering vectors (spec/vectors/tampered-approvals.json): their loader, and the edits
each applies to a validly signed approval. The format: docs/authenticator-kit.md."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from loomcheck.spec.files import SPEC_ROOT, read_json

JSON = Any
Edit = dict[str, Any]  # {"set": path, "value": v} | {"remove": path} | {"signature": change, ...}
SIGNATURE = ("proof", "signature")
VECTORS = "tampered-approvals.json"  # under spec/vectors/


def tampering_vectors() -> dict[str, JSON]:
    """The published document: its groups, each a signed approval and its tamperings."""
    return read_json(SPEC_ROOT / "vectors" / VECTORS)


def edited(event: JSON, edits: Sequence[Edit]) -> JSON:
    """A copy of `event` with `edits` applied in order; `event` itself is unchanged."""
    result = copy.deepcopy(event)
    for edit in edits:
        if "set" in edit:
            result = _set(result, edit["set"], copy.deepcopy(edit["value"]))
        elif "remove" in edit:
            result = _remove(result, edit["remove"])
        elif "signature" in edit:
            result = _set(result, SIGNATURE, changed_signature(result["proof"]["signature"], edit))
        else:
            raise ValueError(f"not an edit: {edit!r}")
    return result


def _set(value: JSON, path: Sequence[str | int], new: JSON) -> JSON:
    if not path:
        return new
    node = value
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return value


def _remove(value: JSON, path: Sequence[str | int]) -> JSON:
    node = value
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return value


def changed_signature(signature: str, edit: Edit) -> JSON:
    """The signature as one change of its text makes it (a string, or a value that wraps it)."""
    change = edit["signature"]
    if change == "flip-bit":
        return _flip_bit(signature, edit["byte"], edit["bit"])
    if change == "cut":
        keep = edit["keep"]
        return signature[:len(signature) // 2 if keep == "half" else keep]
    if change == "extend":
        return edit.get("before", "") + signature * edit.get("times", 1) + edit.get("after", "")
    if change == "upper":
        return signature.upper()
    if change == "first":
        return edit["to"] + signature[1:]
    if change == "last":
        return signature[:-1] + edit["to"]
    if change == "in-list":
        return [signature]
    if change == "in-object":
        return {edit["key"]: signature}
    raise ValueError(f"not a signature change: {change!r}")


def _flip_bit(signature: str, byte: int, bit: int) -> str:
    """One bit of the signature's bytes flipped: of the bytes its hex spells, or, for a signature
    that is not hex, of one character's code."""
    try:
        raw = bytearray(bytes.fromhex(signature))
    except ValueError:
        raw = bytearray()
    if raw:
        raw[byte % len(raw)] ^= 1 << bit
        return raw.hex()
    at = byte % len(signature)
    return signature[:at] + chr(ord(signature[at]) ^ (1 << bit)) + signature[at + 1:]
