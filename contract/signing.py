"""The approver's side of spec/signing.md, written again from the spec (not imported from the
reference kernel): the state machine signs approvals with it, and the approvals.* predicates
use it as the oracle for what a conforming authenticator must accept; `binding` is section 10's
extension. tests/test_approvals.py checks it and the reference against the published vectors."""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from loomcheck.spec.canonical import MAX_SAFE_INTEGER, CanonicalError, canonical_json

PURPOSE = "loom.resume/1"
SIGNATURE = re.compile(r"[0-9a-f]{64}")


def _int(value: Any) -> bool:
    return type(value) is int


def signed_discard(value: Any) -> Any:
    """The signed member (spec/signing.md): false for no override (absent, null, false),
    the exact {count, stepId} object for one; anything else cannot be signed (ADR 0104 D2)."""
    if value is None or value is False:
        return False
    if (isinstance(value, dict) and set(value) == {"stepId", "count"} and isinstance(value["stepId"], str)
            and value["stepId"] and _int(value["count"]) and 0 <= value["count"] <= MAX_SAFE_INTEGER):
        return {"count": value["count"], "stepId": value["stepId"]}
    raise CanonicalError("not-json", "/discardLegacyAnswers", "neither absent nor {stepId, count}")


Binding = dict[str, Any]  # spec/signing.md section 10: {"resumeAs"?: {flowId, transformState}, "incarnation"?: n}


def binding(resume_as: str | None = None, transform: Any = None, incarnation: int = 1) -> Binding:
    """The section-10 members for a resumeAs onto `resume_as` with `transform` (None: a plain
    resume) at the `incarnation`-th execution under its id: none for a plain resume of one never
    erased, which therefore signs exactly ADR 0117 D2's bytes."""
    members: Binding = {}
    if resume_as is not None:
        members["resumeAs"] = {"flowId": resume_as, "transformState": transform}
    if incarnation != 1:
        members["incarnation"] = incarnation
    return members


def message(event_type: str, payload: Any, discard: Any, actor: str, exp: int, execution: str,
            parked_at: int, bound: Binding | None = None) -> bytes:
    discard = signed_discard(discard)
    return canonical_json({**(bound or {}), "purpose": PURPOSE, "eventType": event_type, "payload": payload,
                           "discardLegacyAnswers": discard, "actor": actor, "exp": exp,
                           "executionId": execution, "parkedAtSequence": parked_at}).encode("utf-8")


def sign(event_type: str, payload: Any, *, actor: str, secret: str, exp: int, execution: str, parked_at: int,
         discard: Any = False, bound: Binding | None = None) -> dict[str, Any] | None:
    """The proof {actor, exp, signature} for one park of one execution (ADR 0117 D2), bound to
    the operation and incarnation `bound` names (section 10), or None when the payload has no
    canonical form (spec/canonical-json.md): then nobody can sign it, and an approver sends it
    unsigned."""
    try:
        signed = message(event_type, payload, discard, actor, exp, execution, parked_at, bound)
    except CanonicalError:
        return None
    mac = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return {"actor": actor, "exp": exp, "signature": mac}


def secrets_of(keys: dict[str, Any], actor: str) -> list[str]:
    material = keys.get(actor) if actor in keys else None
    if isinstance(material, str):
        return [material]
    return [s for s in material if isinstance(s, str)] if isinstance(material, list) else []


def weak(keys: Any) -> bool:
    """A key under 16 bytes, the empty one included (ADR 0117 D2)."""
    if not isinstance(keys, dict):
        return False
    return any(len(s.encode("utf-8")) < 16 for actor in keys for s in secrets_of(keys, actor)) or \
        any(isinstance(m, list) and not m for m in keys.values())


def rejection(config: dict[str, Any], now: int, event_type: str, payload: Any, options: dict[str, Any] | None,
              execution: str, parked_at: int | None, bound: Binding | None = None) -> str | None:
    """Why a conforming authenticator configured with `config` must reject this
    resume, or None when it must grant it; `bound`: the section-10 members of the
    operation it is verified for (None: ADR 0117 D2's fields alone). Reasons are
    loomcheck's (spec/signing.md), used in messages only: predicates compare the
    refusal, not the sub-reason."""
    options = options or {}
    proof = options.get("proof")
    if not isinstance(proof, dict) or not isinstance(proof.get("actor"), str) or not proof["actor"]:
        return "actor-missing"
    actor, signature, exp = proof["actor"], proof.get("signature"), proof.get("exp")
    if not isinstance(signature, str) or not signature:
        return "unsigned"
    if not _int(exp):
        return "no-expiry"
    if parked_at is None:
        return "no-park-context"
    keys = (config.get("authenticator") or {}).get("keys") or {}
    secrets = secrets_of(keys, actor)
    if not secrets:
        return "unknown-actor"
    discard = options.get("discardLegacyAnswers")
    try:
        signed = message(event_type, payload, discard, actor, exp, execution, parked_at, bound)
    except CanonicalError:
        return "bad-signature"
    if not SIGNATURE.fullmatch(signature) or not any(
            hmac.compare_digest(hmac.new(s.encode("utf-8"), signed, hashlib.sha256).hexdigest(), signature)
            for s in secrets):
        return "bad-signature"
    if exp <= now:
        return "expired"
    principal = options.get("principal")
    if (config.get("authenticator") or {}).get("requireActor", True) is not False and principal is not None:
        if not isinstance(principal, dict) or principal.get("actor") not in (None, actor):
            return "actor-mismatch"
    return None


def covers(config: dict[str, Any], event_type: str) -> bool:
    gates = (config.get("authenticator") or {}).get("gates") or []
    return isinstance(gates, list) and event_type in gates


def other_character(char: str) -> str:
    """Another character of the same kind and case, so the alteration stays in the proof's
    alphabet and changes the value it spells (in hex, "a" to "A" would spell the same byte)."""
    if char.isdigit():
        return "1" if char == "0" else "0"
    if char.isascii() and char.isalpha():
        first = "a" if char.islower() else "A"
        return chr(ord(first) + (ord(char) - ord(first) + 1) % 26)
    return "x"
