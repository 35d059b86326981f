"""Tampered approvals (ADR 0117 D2): from one validly signed resume event, every change a
correct authenticator MUST reject, each as data: the edits of spec/approval_edits.py, the
signer's fields it is signed with instead, the context it is presented in, and the reason.
The one enumeration the tampering corpus, the published vectors and the authenticator kit
share; what is left out on purpose, and why: docs/authenticator-kit.md."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from loomcheck.reference.approvals import sign_resume, signed_discard
from loomcheck.spec.approval_edits import Edit, edited

__all__ = ["CATEGORIES", "PROOF_CATEGORIES", "RULES", "SHAPE_CATEGORIES", "Signed", "Tampering", "changed_json",
           "event_type_variants", "realised", "shape_cases", "tampering_cases", "tamperings"]

# Each category, and the rule of ADR 0117 D2 (ADR 0104 D2 for the override) its tamperings break.
RULES = {
    "event-type": "D2: the signature covers eventType: a proof moved to another listed gate is rejected.",
    "payload-value": "D2: the signature covers the payload: a changed value is rejected.",
    "payload-key-added": "D2: the signature covers the payload: an added key is rejected.",
    "payload-key-removed": "D2: the signature covers the payload: a removed key is rejected.",
    "view-digest": "D2: the signature covers the payload including the echoed viewDigest (D1): changed, added "
                   "or dropped, it is rejected.",
    "discard-legacy-answers": "D2: the signature covers discardLegacyAnswers, the operator override {stepId, count} "
                              "of ADR 0104 D2: attached, altered or removed after signing, it is rejected.",
    "actor": "D2: the signature covers the actor: a proof re-labelled as another actor is rejected.",
    "exp": "D2: the signature covers the expiry: a proof whose exp was moved is rejected.",
    "signature-bitflip": "D2: the signature is compared whole: one bit flipped, it is rejected.",
    "signature-truncated": "D2: the signature is compared whole: truncated, it is rejected.",
    "signature-extended": "D2: the signature is compared whole: extended, it is rejected.",
    "signature-malformed": "D2: a signature that is not exactly the signer's string is rejected, never an exception.",
    "unsigned": "D2: it rejects unsigned approvals: a proof with no signature (absent, null or empty).",
    "actor-missing": "D2: it rejects actor-less approvals: no proof, a proof that is no object, an actor absent, "
                     "null, empty or not a string.",
    "no-expiry": "D2: exp is required: a proof whose exp is absent or not an integer is rejected.",
    "expired": "D2: exp bounds a proof's life: exp <= now is expired.",
    "unknown-actor": "D2: it rejects unknown-actor approvals, validly signed or not, hostile names included.",
    "wrong-secret": "D2: it rejects forged approvals: a known actor's name signed with a secret not theirs.",
    "other-execution": "D2: the signature holds for one park of one execution: refused at another execution, "
                       "including a fork (same park sequence, its own id).",
    "later-park": "D2: the signature holds for one park: refused at a later park of the same gate (a loop).",
    "no-park-context": "D2: without a context (or an unparked execution, or one with no id) it rejects.",
    "not-an-event": "D2: an event that is not an object is rejected, never an exception.",
    "earlier-park": "D2: the signature holds for one park: refused at an earlier park of the same execution.",
}
# What a driver's resume can carry (tampering_cases), and what only a caller of verify can (shape_cases).
SHAPE_CATEGORIES = ("not-an-event", "earlier-park")
CATEGORIES = tuple(category for category in RULES if category not in SHAPE_CATEGORIES)
# Tamperings of the proof's own members in spec/signing.md's format (profile proof-wire-format): for
# a kernel that signs its own proofs they are foreign bytes its verifier refuses trivially.
PROOF_CATEGORIES = frozenset({"actor", "exp", "signature-bitflip", "signature-truncated", "signature-extended",
                              "signature-malformed", "unsigned", "actor-missing", "no-expiry", "unknown-actor",
                              "wrong-secret"})
MAX_LEAVES = 32  # payload leaves changed one at a time, at most
MAX_COUNT = 2**53 - 1  # an override's count is a JSON-safe integer (spec/signing.md)
# Overrides attached to an approval signed without one. Count 0 ("discard nothing")
# is there for a verifier that reads a zero count as no override (ADR 0104 D2).
ATTACHED_OVERRIDES = ({"stepId": "review", "count": 0}, {"stepId": "review", "count": 1})
BAD = "bad-signature"

Triple = tuple[str, dict, dict | None]
Sign = Callable[..., dict]


@dataclass(frozen=True)
class Signed:
    """The approval every tampering starts from, and the authenticator's view of it."""

    event: dict[str, Any]
    actor: str
    secret: str
    exp: int
    execution_id: str
    parked_at_sequence: int
    other_actor: tuple[str, str]
    now: int

    def context(self, **changes: Any) -> dict[str, Any]:
        return {"executionId": self.execution_id, "parkedAtSequence": self.parked_at_sequence, "principal": None,
                **changes}


@dataclass(frozen=True)
class Tampering:
    """One change a correct authenticator must reject, with the reason spec/signing.md names."""

    category: str
    reason: str
    edits: tuple[Edit, ...] = ()
    signer: dict[str, Any] = field(default_factory=dict)  # actor, secret or exp signed with instead
    context: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"category": self.category, "reason": self.reason, **({"sign": self.signer} if self.signer else {}),
                "edits": list(self.edits), "context": self.context}


def realised(tampering: Tampering, start: Signed, sign: Sign = sign_resume) -> dict:
    """The tampered event: `start` signed by `sign` (with the tampering's signer fields), then edited."""
    fields = {"actor": start.actor, "secret": start.secret, "exp": start.exp, **tampering.signer}
    valid = sign(copy.deepcopy(start.event), execution_id=start.execution_id,
                 parked_at_sequence=start.parked_at_sequence, **fields)
    return edited(valid, tampering.edits)


def tamperings(event: dict, *, actor: str, secret: str, exp: int, execution_id: str, parked_at_sequence: int,
               other_actor: tuple[str, str], now: int) -> Iterator[Triple]:
    """(category, tampered event, context) triples a correct authenticator must reject, signed
    with the reference `sign_resume`. It must know `actor` and `other_actor`, list `event["type"]`
    and every `event_type_variants` of it as gates, and judge time by `now`, before `exp`."""
    start = Signed(event, actor, secret, exp, execution_id, parked_at_sequence, other_actor, now)
    for tampering in tampering_cases(start):
        yield tampering.category, realised(tampering, start), copy.deepcopy(tampering.context)


def tampering_cases(start: Signed) -> Iterator[Tampering]:
    """Every tampering of `start`, in a fixed order."""
    if not start.exp > start.now:
        raise ValueError("exp must be after now: the untampered event must be valid")
    yield from _event_fields(start)
    yield from _proof_fields(start)
    yield from _signature_bytes(start)
    yield from _proof_shapes(start)
    yield from _signer(start)
    yield from _parks(start)


def event_type_variants(event_type: str) -> tuple[str, ...]:
    """The gate names an "event-type" tampering moves a proof to: near misses and a
    hostile name, never `event_type` itself."""
    candidates = (event_type + "s", event_type.swapcase(), "x" + event_type, event_type + "\u200b", "__proto__")
    return tuple(c for c in dict.fromkeys(candidates) if c != event_type)


def _set(path: list[str | int], value: Any) -> Edit:
    return {"set": path, "value": value}


def _event_fields(start: Signed) -> Iterator[Tampering]:
    """ADR 0117 D2: every signed field of the event, changed after signing."""
    context = start.context()
    for variant in event_type_variants(start.event["type"]):
        yield Tampering("event-type", BAD, (_set(["type"], variant),), context=context)
    payload = start.event.get("payload")
    for path in _leaves(payload):
        yield Tampering("payload-value", BAD, (_set(["payload", *path], changed_json(_at(payload, path))),),
                        context=context)
    if not isinstance(payload, dict) or not payload:
        other = {"approved": True} if payload != {"approved": True} else None
        yield Tampering("payload-value", BAD, (_set(["payload"], other),), context=context)
    if isinstance(payload, dict):
        for key, value in (("approved", True), ("amount", 1_000_000), ("viewDigest", "v2:" + "0" * 64),
                           ("__proto__", {"admin": True}), ("", None)):
            if key not in payload:
                yield Tampering("payload-key-added", BAD, (_set(["payload", key], value),), context=context)
        for key in sorted(payload):
            yield Tampering("payload-key-removed", BAD, ({"remove": ["payload", key]},), context=context)
        for digest in _digests(payload.get("viewDigest")):
            yield Tampering("view-digest", BAD, (_set(["payload", "viewDigest"], digest),), context=context)
    # ADR 0104 D2: the signature MUST cover the operator override, so attaching one,
    # altering its count or its stepId, or removing a signed one is a tampering.
    for edit in _override_edits(start.event.get("discardLegacyAnswers")):
        yield Tampering("discard-legacy-answers", BAD, (edit,), context=context)


def _digests(digest: Any) -> list[Any]:
    """A payload's viewDigest (ADR 0117 D1) changed: each near miss, then dropped to null; one
    added where there was none."""
    if not isinstance(digest, str):
        return ["v2:" + "0" * 64]
    changed = (digest[:-1] + ("0" if digest[-1:] != "0" else "1"), digest.upper(),
               "v1:" + digest[3:] if digest.startswith("v2:") else "v2:" + digest[3:], digest + " ", "")
    return [c for c in changed if c != digest] + [None]


def _override_edits(signed: Any) -> Iterator[Edit]:
    """The signed discardLegacyAnswers attached, altered or removed: every variant signs
    differently (ADR 0104 D2, spec/signing.md section 2)."""
    override = signed_discard(signed)  # the event was signed, so this is well formed
    if override is False:
        for attached in ATTACHED_OVERRIDES:
            yield _set(["discardLegacyAnswers"], dict(attached))
        return
    step_id, count = override["stepId"], override["count"]
    counts = (count + 1 if count < MAX_COUNT else count - 1, count - 1 if count > 0 else count + 2,
              0 if count != 0 else MAX_COUNT)
    for changed in dict.fromkeys(counts):
        if changed != count:
            yield _set(["discardLegacyAnswers"], {"stepId": step_id, "count": changed})
    for changed_step in dict.fromkeys((step_id + "x", step_id.swapcase(), "other-" + step_id, step_id[:-1])):
        if changed_step not in (step_id, ""):
            yield _set(["discardLegacyAnswers"], {"stepId": changed_step, "count": count})
    yield {"remove": ["discardLegacyAnswers"]}
    for none in (None, False):  # both mean "no override", and so sign as `false`
        yield _set(["discardLegacyAnswers"], none)


def _proof_fields(start: Signed) -> Iterator[Tampering]:
    """ADR 0117 D2: the actor and the expiry are signed too."""
    context = start.context()
    yield Tampering("actor", BAD, (_set(["proof", "actor"], start.other_actor[0]),), context=context)
    if start.actor.swapcase() != start.actor:
        yield Tampering("actor", "unknown-actor", (_set(["proof", "actor"], start.actor.swapcase()),),
                        context=context)
    exp, now = start.exp, start.now
    for moved in (exp + 1, exp + 86_400_000, exp - 1 if exp - 1 > now else exp + 2):
        yield Tampering("exp", BAD, (_set(["proof", "exp"], moved),), context=context)


def _signature_bytes(start: Signed) -> Iterator[Tampering]:
    """ADR 0117 D2: the signature is compared whole, and is a string of exactly its bytes."""
    context = start.context()
    changes: list[tuple[str, Edit]] = [
        *(("signature-bitflip", {"signature": "flip-bit", "byte": byte, "bit": bit})
          for byte, bit in ((0, 0), (0, 7), (15, 3), (31, 0), (31, 7))),
        *(("signature-truncated", {"signature": "cut", "keep": keep}) for keep in (-1, -2, "half", 8, 1)),
        *(("signature-extended", {"signature": "extend", **extension})
          for extension in ({"after": "0"}, {"after": "00"}, {"times": 2}, {"before": "0"})),
        ("signature-malformed", {"signature": "upper"}), ("signature-malformed", {"signature": "first", "to": "g"}),
        ("signature-malformed", {"signature": "first", "to": " "}),
        ("signature-malformed", {"signature": "last", "to": "\n"}),
        ("signature-malformed", _set(["proof", "signature"], 12345)), ("signature-malformed", {"signature": "in-list"}),
        ("signature-malformed", {"signature": "in-object", "key": "hex"}),
        ("signature-malformed", _set(["proof", "signature"], True)),
    ]
    for category, edit in changes:
        yield Tampering(category, BAD, (edit,), context=context)


def _proof_shapes(start: Signed) -> Iterator[Tampering]:
    """D2: it rejects unsigned and actor-less approvals, and one with no expiry."""
    context = start.context()
    for edit in ({"remove": ["proof", "signature"]}, _set(["proof", "signature"], None),
                 _set(["proof", "signature"], "")):
        yield Tampering("unsigned", "unsigned", (edit,), context=context)
    for edit in ({"remove": ["proof"]}, _set(["proof", "actor"], None), _set(["proof", "actor"], ""),
                 {"remove": ["proof", "actor"]}, _set(["proof"], "not an object")):
        yield Tampering("actor-missing", "actor-missing", (edit,), context=context)
    yield Tampering("no-expiry", "no-expiry", ({"remove": ["proof", "exp"]},), context=context)
    for garbage in (None, str(start.exp), True, [start.exp], {"ms": start.exp}):
        yield Tampering("no-expiry", "no-expiry", (_set(["proof", "exp"], garbage),), context=context)


def _signer(start: Signed) -> Iterator[Tampering]:
    """Signed correctly, but expired, by an actor nobody knows, or with a secret not the actor's."""
    context = start.context()
    for until in (start.now, start.now - 1, start.now - 86_400_000, 0):
        yield Tampering("expired", "expired", signer={"exp": until}, context=context)
    actor, other_name, other_secret = start.actor, *start.other_actor
    for stranger in (actor + "-unknown", actor.upper() + "_", "__proto__", "constructor", "__class__", "get"):
        if stranger not in (actor, other_name):
            yield Tampering("unknown-actor", "unknown-actor", signer={"actor": stranger}, context=context)
    for wrong in (other_secret, start.secret + "!", start.secret[::-1], "an-attacker-guessed-secret"):
        if wrong != start.secret and len(wrong.encode("utf-8")) >= 16:
            yield Tampering("wrong-secret", BAD, signer={"secret": wrong}, context=context)


def _parks(start: Signed) -> Iterator[Tampering]:
    """ADR 0117 D2: one park of one execution; without a park context it rejects."""
    execution, park = start.execution_id, start.parked_at_sequence
    for other in (execution + "-fork", execution + "/1", execution.swapcase(), "x" + execution):
        if other != execution:
            yield Tampering("other-execution", BAD, context=start.context(executionId=other))
    for later in (park + 1, park + 2, park + 64, park + 1_000_000):
        yield Tampering("later-park", BAD, context=start.context(parkedAtSequence=later))
    for missing in (None, {}, {"executionId": execution}, start.context(parkedAtSequence=None),
                    start.context(parkedAtSequence=0), start.context(executionId=None),
                    start.context(parkedAtSequence=True)):
        yield Tampering("no-park-context", "no-park-context", context=missing)


def shape_cases(start: Signed) -> Iterator[Tampering]:
    """What only a caller of verify can hand it: an event or a context of the wrong JSON kind, a
    proof whose members are, and the park binding seen from an earlier park. A kernel's resume
    always carries an event object and its own park, and the corpus presents later parks only."""
    context = start.context()
    yield Tampering("not-an-event", "actor-missing", (_set([], [start.event["type"], {"approved": True}]),),
                    context=context)
    yield Tampering("actor-missing", "actor-missing", (_set(["proof"], [start.actor, start.exp]),), context=context)
    yield Tampering("actor-missing", "actor-missing", (_set(["proof", "actor"], 42),), context=context)
    yield Tampering("signature-malformed", BAD, (_set(["proof", "signature"], "é" * 64),), context=context)
    yield Tampering("no-park-context", "no-park-context", context=[start.execution_id, start.parked_at_sequence])
    without_execution = {k: v for k, v in context.items() if k != "executionId"}
    yield Tampering("no-park-context", "no-park-context", context=without_execution)
    if start.parked_at_sequence > 1:
        yield Tampering("earlier-park", BAD, context=start.context(parkedAtSequence=start.parked_at_sequence - 1))


def changed_json(value: Any) -> Any:
    """A JSON value of the same kind that is certainly different (numbers by value,
    since 1 and 1.0 are one JSON number)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1 if value < MAX_COUNT else value - 1
    if isinstance(value, float):
        return value + 1.0 if value + 1.0 != value else -value if value else 1.0
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, None]
    if isinstance(value, dict):
        return {**value, "tampered": True} if "tampered" not in value else {**value, "tampered": None}
    return 0  # null


def _leaves(value: Any) -> list[list[Any]]:
    """Paths to the leaves (and empty containers) of a JSON value, sorted keys first."""
    paths: list[list[Any]] = []
    stack: list[tuple[list[Any], Any]] = [([], value)]
    while stack and len(paths) < MAX_LEAVES:
        path, node = stack.pop()
        children = (sorted(node.items()) if isinstance(node, dict) else list(enumerate(node))
                    if isinstance(node, list) else [])
        if not children:
            paths.append(path)
        stack.extend((path + [key], child) for key, child in reversed(children))
    return paths


def _at(value: Any, path: list[Any]) -> Any:
    for key in path:
        value = value[key]
    return value
