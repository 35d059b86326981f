"""Tampered approvals for the driver-level fuzzer (ADR 0117 D2): from one validly
signed resume event, every change a correct authenticator MUST reject.

`tamperings(event, actor=..., secret=..., exp=..., execution_id=...,
parked_at_sequence=..., other_actor=(name, secret), now=...)` signs `event` with
the reference `sign_resume` and yields `(category, tampered_event, context)`.
Deterministic: the same arguments give the same triples in the same order.

The authenticator the triples are presented to must know `actor` (with `secret`)
and `other_actor`, must list `event["type"]` and every name of
`event_type_variants(event["type"])` as gates (otherwise an "event-type" triple
is merely not-applicable; a kernel refuses it anyway, at the gate-name check),
and must judge time by `now`, which must be before `exp`. Every context carries
no principal, so `requireActor` does not matter.

`rebindings(...)` (spec/signing.md section 10, beyond ADR 0117 D2) is apart: a validly
signed approval presented for an operation or an incarnation it was not signed for. Only an
authenticator that binds them must reject those; one that follows ADR 0117 D2 only grants the
plain resume's proof wherever its park and fields match, and is not wrong by the ADR.

Not here, on purpose: an integer exp (or override count) sent as a float
(1.7e12 and 1700000000000 are one JSON number, and a JavaScript kernel cannot
tell them apart), payload numbers re-spelled (1 and 1.0 have one canonical
form), and `null` or `false` put where there was no override (absent, null and
false are one signed text, ADR 0104 D2): none is a change a kernel could be
required to see (spec/signing.md).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from loomcheck.reference.approvals import sign_resume, signed_discard
from loomcheck.contract.signing import other_character

__all__ = ["CATEGORIES", "OWN_PROOF_CATEGORIES", "REBINDING_CATEGORIES", "event_type_variants", "other_character",
           "own_proof_mutations", "rebindings", "tamperings"]

CATEGORIES = (
    "event-type", "payload-value", "payload-key-added", "payload-key-removed", "view-digest",
    "discard-legacy-answers", "actor", "exp", "signature-bitflip", "signature-truncated", "signature-extended",
    "signature-malformed", "unsigned", "actor-missing", "no-expiry", "expired", "unknown-actor", "wrong-secret",
    "other-execution", "later-park", "no-park-context",
)

# Alterations of an implementation's own proof, opaque to the suite (feature "signing"): any JSON object.
# Only alterations that change what a member carries: the same bytes spelled another way (hex in
# upper case, base64's other alphabet, padding, whitespace) or a member added beside the signed ones
# is no forgery, and ADR 0117 D2 binds the signed fields, not a proof's spelling.
OWN_PROOF_CATEGORIES = ("proof-character-changed", "proof-truncated", "proof-extended",
                        "proof-member-dropped", "proof-number-moved")
# A signed approval presented for another operation or incarnation (spec/signing.md section 10).
REBINDING_CATEGORIES = ("resume-proof-for-resume-as", "resume-as-proof-for-resume", "other-target-flow",
                        "other-transform", "re-created-execution")
MAX_LEAVES = 32  # payload leaves changed one at a time, at most
MAX_COUNT = 2**53 - 1  # an override's count is a JSON-safe integer (spec/signing.md)
# Overrides attached to an approval signed without one. Count 0 ("discard nothing")
# is there for a verifier that reads a zero count as no override (ADR 0104 D2).
ATTACHED_OVERRIDES = ({"stepId": "review", "count": 0}, {"stepId": "review", "count": 1})

Triple = tuple[str, dict, dict | None]


def event_type_variants(event_type: str) -> tuple[str, ...]:
    """The gate names an "event-type" tampering moves a proof to: near misses and a
    hostile name, never `event_type` itself."""
    candidates = (event_type + "s", event_type.swapcase(), "x" + event_type, event_type + "\u200b", "__proto__")
    seen: list[str] = []
    for candidate in candidates:
        if candidate != event_type and candidate not in seen:
            seen.append(candidate)
    return tuple(seen)


def _changed(value: Any) -> Any:
    """A JSON value of the same kind that is certainly different (numbers by value,
    since 1 and 1.0 are one JSON number)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value < 2**53 - 1 else value - 1
    if isinstance(value, float):
        return value + 1.0 if value + 1.0 != value else -value if value else 1.0
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, None]
    if isinstance(value, dict):
        return {**value, "tampered": True} if "tampered" not in value else {**value, "tampered": None}
    return 0  # null


def _leaves(value: Any) -> list[tuple[Any, ...]]:
    """Paths to the leaves (and empty containers) of a JSON value, sorted keys first."""
    paths: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack and len(paths) < MAX_LEAVES:
        path, node = stack.pop()
        children = (sorted(node.items()) if isinstance(node, dict) else list(enumerate(node))
                    if isinstance(node, list) else [])
        if not children:
            paths.append(path)
        stack.extend((path + (key,), child) for key, child in reversed(children))
    return paths


def _with(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copied = copy.deepcopy(value)
    node = copied
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return copied


def _flip_bit(signature: str, byte: int, bit: int) -> str:
    raw = bytearray(bytes.fromhex(signature))
    raw[byte % len(raw)] ^= 1 << bit
    return raw.hex()


def tamperings(event: dict, *, actor: str, secret: str, exp: int, execution_id: str, parked_at_sequence: int,
               other_actor: tuple[str, str], now: int) -> Iterator[Triple]:
    """(category, tampered event, context) triples a correct authenticator must
    reject; see the module docstring for how it must be configured."""
    if not exp > now:
        raise ValueError("exp must be after now: the untampered event must be valid")
    other_name, other_secret = other_actor

    def sign(base: dict, *, as_actor: str = actor, with_secret: str = secret, until: int = exp) -> dict:
        return sign_resume(base, actor=as_actor, secret=with_secret, exp=until, execution_id=execution_id,
                           parked_at_sequence=parked_at_sequence)

    def context(**changes: Any) -> dict:
        return {"executionId": execution_id, "parkedAtSequence": parked_at_sequence, "principal": None, **changes}

    valid = sign(event)
    payload = valid.get("payload")

    def after(change: Any = None, *, payload_to: Any = ..., proof: dict | None = None, **fields: Any) -> dict:
        tampered = copy.deepcopy(valid)
        if payload_to is not ...:
            tampered["payload"] = payload_to
        tampered.update(fields)
        if proof is not None:
            tampered["proof"] = {**tampered["proof"], **proof}
        return tampered

    # ADR 0117 D2: every signed field of the event, changed after signing.
    for variant in event_type_variants(valid["type"]):
        yield "event-type", after(type=variant), context()

    for path in _leaves(payload):
        yield "payload-value", after(payload_to=_with(payload, path, _changed(_at(payload, path)))), context()
    if not isinstance(payload, dict) or not payload:
        yield "payload-value", after(payload_to={"approved": True} if payload != {"approved": True} else None), \
            context()

    if isinstance(payload, dict):
        for key, value in (("approved", True), ("amount", 1_000_000), ("viewDigest", "v2:" + "0" * 64),
                           ("__proto__", {"admin": True}), ("", None)):
            if key not in payload:
                yield "payload-key-added", after(payload_to={**payload, key: value}), context()
        for key in sorted(payload):
            yield "payload-key-removed", after(payload_to={k: v for k, v in payload.items() if k != key}), context()

    digest = payload.get("viewDigest") if isinstance(payload, dict) else None
    if isinstance(payload, dict) and isinstance(digest, str):
        for changed in (digest[:-1] + ("0" if digest[-1:] != "0" else "1"), digest.upper(),
                        "v1:" + digest[3:] if digest.startswith("v2:") else "v2:" + digest[3:], digest + " ", ""):
            if changed != digest:
                yield "view-digest", after(payload_to={**payload, "viewDigest": changed}), context()
        yield "view-digest", after(payload_to={**payload, "viewDigest": None}), context()
    elif isinstance(payload, dict):
        yield "view-digest", after(payload_to={**payload, "viewDigest": "v2:" + "0" * 64}), context()

    # ADR 0104 D2: the signature MUST cover the operator override, so attaching one,
    # altering its count or its stepId, or removing a signed one is a tampering.
    for tampered in _override_tamperings(valid):
        yield "discard-legacy-answers", tampered, context()

    yield "actor", after(proof={"actor": other_name}), context()
    if actor.swapcase() != actor:
        yield "actor", after(proof={"actor": actor.swapcase()}), context()

    for moved in (exp + 1, exp + 86_400_000, exp - 1 if exp - 1 > now else exp + 2):
        yield "exp", after(proof={"exp": moved}), context()

    signature = valid["proof"]["signature"]
    for byte, bit in ((0, 0), (0, 7), (15, 3), (31, 0), (31, 7)):
        yield "signature-bitflip", after(proof={"signature": _flip_bit(signature, byte, bit)}), context()
    for length in (len(signature) - 1, len(signature) - 2, len(signature) // 2, 8, 1):
        yield "signature-truncated", after(proof={"signature": signature[:length]}), context()
    for extended in (signature + "0", signature + "00", signature * 2, "0" + signature):
        yield "signature-extended", after(proof={"signature": extended}), context()
    for malformed in (signature.upper(), "g" + signature[1:], " " + signature[1:], signature[:-1] + "\n",
                      12345, [signature], {"hex": signature}, True):
        yield "signature-malformed", after(proof={"signature": malformed}), context()

    yield "unsigned", {k: v for k, v in after().items() if k != "proof"} | {
        "proof": {"actor": actor, "exp": exp}}, context()
    for empty in (None, ""):
        yield "unsigned", after(proof={"signature": empty}), context()

    yield "actor-missing", {k: v for k, v in valid.items() if k != "proof"}, context()
    yield "actor-missing", after(proof={"actor": None}), context()
    yield "actor-missing", after(proof={"actor": ""}), context()
    no_actor = after()
    del no_actor["proof"]["actor"]
    yield "actor-missing", no_actor, context()
    yield "actor-missing", after(proof=None) | {"proof": "not an object"}, context()

    no_exp = after()
    del no_exp["proof"]["exp"]
    yield "no-expiry", no_exp, context()
    for garbage in (None, str(exp), True, [exp], {"ms": exp}):
        yield "no-expiry", after(proof={"exp": garbage}), context()

    # Signed correctly, but no longer (or never) valid.
    for until in (now, now - 1, now - 86_400_000, 0):
        yield "expired", sign(event, until=until), context()

    for stranger in (actor + "-unknown", actor.upper() + "_", "__proto__", "constructor", "__class__", "get"):
        if stranger not in (actor, other_name):
            yield "unknown-actor", sign(event, as_actor=stranger), context()

    for wrong in (other_secret, secret + "!", secret[::-1], "an-attacker-guessed-secret"):
        if wrong != secret and len(wrong.encode("utf-8")) >= 16:
            yield "wrong-secret", sign(event, with_secret=wrong), context()

    # ADR 0117 D2: one park of one execution.
    for other in (execution_id + "-fork", execution_id + "/1", execution_id.swapcase(), "x" + execution_id):
        if other != execution_id:
            yield "other-execution", copy.deepcopy(valid), context(executionId=other)
    for later in (parked_at_sequence + 1, parked_at_sequence + 2, parked_at_sequence + 64,
                  parked_at_sequence + 1_000_000):
        yield "later-park", copy.deepcopy(valid), context(parkedAtSequence=later)

    for missing in (None, {}, {"executionId": execution_id}, context(parkedAtSequence=None),
                    context(parkedAtSequence=0), context(executionId=None), context(parkedAtSequence=True)):
        yield "no-park-context", copy.deepcopy(valid), copy.deepcopy(missing)


def rebindings(event: dict, *, actor: str, secret: str, exp: int, execution_id: str, parked_at_sequence: int,
               resume_as: dict, other_flow: str) -> Iterator[Triple]:
    """(category, signed event, context) triples an authenticator that binds the operation and the
    incarnation (spec/signing.md section 10) must reject: the approval signed for one operation
    (a plain resume, or the resumeAs `resume_as` = {flowId, transformState} names) or incarnation,
    presented for another. `other_flow` is a target other than resume_as's. Configured as for
    `tamperings`; contexts carry the park, the operation and the incarnation, no principal."""
    if other_flow == resume_as.get("flowId"):
        raise ValueError("other_flow must differ from the resumeAs's target")

    def sign(**binding: Any) -> dict:
        return sign_resume(event, actor=actor, secret=secret, exp=exp, execution_id=execution_id,
                           parked_at_sequence=parked_at_sequence, **binding)

    def context(operation: dict | None = None, incarnation: int = 1) -> dict:
        return {"executionId": execution_id, "parkedAtSequence": parked_at_sequence, "principal": None,
                "operation": operation or {"type": "resume"}, "incarnation": incarnation}

    def onto(flow: Any, transform: Any) -> dict:
        return {"type": "resumeAs", "flowId": flow, "transformState": transform}

    flow, transform = resume_as["flowId"], resume_as.get("transformState")
    plain, moved = sign(), sign(resume_as=resume_as)
    # The probe's case: what the approver saw was a resume; the resumeAs runs other code, on migrated input.
    for target, state in _distinct([(flow, transform), (flow, None), (other_flow, transform)]):
        yield "resume-proof-for-resume-as", copy.deepcopy(plain), context(onto(target, state))
    yield "resume-as-proof-for-resume", copy.deepcopy(moved), context()
    yield "other-target-flow", copy.deepcopy(moved), context(onto(other_flow, transform))
    for changed in _distinct([_changed(transform), None, {"name": "wrap", "key": "other"}]):
        if changed != transform:
            yield "other-transform", copy.deepcopy(moved), context(onto(flow, changed))
    # The execution re-created under the id after erase is not the one whose park the approver saw.
    yield "re-created-execution", copy.deepcopy(plain), context(incarnation=2)
    yield "re-created-execution", sign(incarnation=2), context(incarnation=3)
    yield "re-created-execution", copy.deepcopy(moved), context(onto(flow, transform), 2)


def _distinct(items: list[Any]) -> list[Any]:
    """In order, each once (JSON values are not hashable)."""
    kept: list[Any] = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return kept


def _override_tamperings(valid: dict) -> Iterator[dict]:
    """The validly signed `valid` with its discardLegacyAnswers attached, altered or
    removed: every variant signs differently (ADR 0104 D2, spec/signing.md section 2)."""
    override = signed_discard(valid.get("discardLegacyAnswers"))  # `valid` was signed, so this is well formed
    if override is False:
        for attached in ATTACHED_OVERRIDES:
            yield {**copy.deepcopy(valid), "discardLegacyAnswers": dict(attached)}
        return
    step_id, count = override["stepId"], override["count"]
    counts = (count + 1 if count < MAX_COUNT else count - 1, count - 1 if count > 0 else count + 2,
              0 if count != 0 else MAX_COUNT)
    for changed in dict.fromkeys(counts):  # deduplicated, in order
        if changed != count:
            yield {**copy.deepcopy(valid), "discardLegacyAnswers": {"stepId": step_id, "count": changed}}
    for changed_step in dict.fromkeys((step_id + "x", step_id.swapcase(), "other-" + step_id, step_id[:-1])):
        if changed_step not in (step_id, ""):
            yield {**copy.deepcopy(valid), "discardLegacyAnswers": {"stepId": changed_step, "count": count}}
    removed = copy.deepcopy(valid)
    del removed["discardLegacyAnswers"]
    yield removed
    for none in (None, False):  # both mean "no override", and so sign as `false`
        yield {**copy.deepcopy(valid), "discardLegacyAnswers": none}


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def own_proof_mutations(proof: dict) -> Iterator[tuple[str, dict]]:
    """(category, altered proof): generic changes of an opaque proof object (ADR 0117 D2: whatever
    its encoding, a verifier accepts exactly what its signer produced). Each differs from `proof`."""
    seen: list[dict] = [proof]

    def fresh(category: str, altered: dict) -> Iterator[tuple[str, dict]]:
        if altered not in seen:
            seen.append(altered)
            yield category, altered

    for name in sorted(proof):
        value = proof[name]
        if isinstance(value, str) and value:
            # Not the last character: in unpadded base64 it may carry only bits a decoder drops.
            for at in dict.fromkeys((0, len(value) // 2)):
                yield from fresh("proof-character-changed",
                                 {**proof, name: value[:at] + other_character(value[at]) + value[at + 1:]})
            for cut in dict.fromkeys((len(value) - 1, len(value) // 2, 1, 0)):
                yield from fresh("proof-truncated", {**proof, name: value[:cut]})
            for tail in ("A", "0", value):
                yield from fresh("proof-extended", {**proof, name: value + tail})
        elif isinstance(value, int) and not isinstance(value, bool):
            for moved in (value + 1, value - 1):
                yield from fresh("proof-number-moved", {**proof, name: moved})
        yield from fresh("proof-member-dropped", {k: v for k, v in proof.items() if k != name})
