"""The approver's half of signed approvals (ADR 0117 D1, D2) as units: the signing input
and the published vectors, the operator's override (ADR 0104 D2), the signer's refusals, and
the approver helpers. The verifier: tests/test_authenticator.py."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from typing import Any

import pytest

from approval_fixtures import CONTEXT, EVENT, EXECUTION, EXP, PARK, SECRET, authenticator, reason, signed
from loomcheck.reference.approvals import (
    PURPOSE, WeakSecretError, answer_approval, parked_at_sequence, sign_resume, signed_discard, signing_input,
)
from loomcheck.reference.authenticator import SignedResumeAuthenticator, Verdict
from loomcheck.reference.events import Event
from loomcheck.reference.fold import State
from loomcheck.reference.security import ResumeOptions
from loomcheck.spec.canonical import canonical_json, view_digest
from loomcheck.spec.files import SPEC_ROOT, read_json


# ------------------------------------------------------------ signing input


def test_signing_input_is_the_whole_event_and_the_park() -> None:
    """ADR 0117 D2: type, payload (with the echoed digest), discardLegacyAnswers, actor, exp and the park."""
    text = signing_input(EVENT, actor="alice", exp=EXP, execution_id=EXECUTION, parked_at_sequence=PARK)
    assert json.loads(text) == {"purpose": PURPOSE, "eventType": "Approval", "payload": EVENT["payload"],
                                "discardLegacyAnswers": False, "actor": "alice", "exp": EXP,
                                "executionId": EXECUTION, "parkedAtSequence": PARK}
    assert text.decode("utf-8") == canonical_json(json.loads(text)), "the text is canonical JSON"
    assert PURPOSE == "loom.resume/1"


def test_absent_fields_sign_as_their_defaults() -> None:
    """An absent (or null, or false) discardLegacyAnswers is false and an absent payload is null; a proof is
    ignored. An override is not the default."""
    base = signing_input({"type": "G", "payload": None}, actor="a", exp=1, execution_id="e", parked_at_sequence=1)
    for same in ({"type": "G"}, {"type": "G", "payload": None, "discardLegacyAnswers": False},
                 {"type": "G", "discardLegacyAnswers": None},
                 {"type": "G", "payload": None, "proof": {"actor": "x", "exp": 2, "signature": "00"}}):
        assert signing_input(same, actor="a", exp=1, execution_id="e", parked_at_sequence=1) == base
    assert b'"discardLegacyAnswers":false' in base
    overridden = signing_input({"type": "G", "discardLegacyAnswers": {"stepId": "h", "count": 0}}, actor="a", exp=1,
                               execution_id="e", parked_at_sequence=1)
    assert overridden != base


# ------------------------------------------- the operator override (ADR 0104 D2)

OVERRIDE: dict[str, Any] = {"stepId": "review", "count": 2}


@pytest.mark.parametrize("none", [..., None, False], ids=["absent", "null", "false"])
def test_no_override_signs_the_bytes_it_always_signed(none: Any) -> None:
    """ADR 0104 D2 changed the override's form, not the no-override bytes: absent == null == false, and an
    approval signed before the change (absent) still verifies when the caller spells it null or false."""
    event = dict(EVENT) if none is ... else {**EVENT, "discardLegacyAnswers": none}
    text = signing_input(event, actor="alice", exp=EXP, execution_id=EXECUTION, parked_at_sequence=PARK)
    assert json.loads(text)["discardLegacyAnswers"] is False
    assert text == signing_input(EVENT, actor="alice", exp=EXP, execution_id=EXECUTION, parked_at_sequence=PARK)
    assert reason(authenticator().verify({**event, "proof": signed()["proof"]}, CONTEXT)) == "granted"
    assert signed_discard(None if none is ... else none) is False


@pytest.mark.parametrize("count", [0, 1, 2, 2**53 - 1])
def test_an_override_is_signed_as_the_object(count: int) -> None:
    """ADR 0104 D2: the signature covers the override: exactly {"count", "stepId"}, whatever order it came in."""
    event = {**EVENT, "discardLegacyAnswers": {"count": count, "stepId": "review"}}
    text = signing_input(event, actor="alice", exp=EXP, execution_id=EXECUTION, parked_at_sequence=PARK)
    assert json.loads(text)["discardLegacyAnswers"] == {"count": count, "stepId": "review"}
    assert f'"discardLegacyAnswers":{{"count":{count},"stepId":"review"}}'.encode() in text
    reordered = {**EVENT, "discardLegacyAnswers": {"stepId": "review", "count": count}}
    assert signing_input(reordered, actor="alice", exp=EXP, execution_id=EXECUTION, parked_at_sequence=PARK) == text
    assert reason(authenticator().verify(signed(event), CONTEXT)) == "granted"
    assert reason(authenticator().verify(signed(reordered), CONTEXT)) == "granted"
    assert signed(event)["discardLegacyAnswers"] == event["discardLegacyAnswers"], "the signed event carries it"


MALFORMED_OVERRIDES: list[Any] = [
    True, 0, 1, 0.0, "", "review", [], ["review", 2], {},
    {"stepId": "review"}, {"count": 2}, {"stepId": "review", "count": 2, "extra": None},
    {"stepId": "review", "count": 2, "discardAll": True},
    {"stepId": "", "count": 2}, {"stepId": None, "count": 2}, {"stepId": 7, "count": 2}, {"stepId": ["a"], "count": 2},
    {"stepId": "review", "count": -1}, {"stepId": "review", "count": True}, {"stepId": "review", "count": False},
    {"stepId": "review", "count": 2.0}, {"stepId": "review", "count": 0.5}, {"stepId": "review", "count": math.nan},
    {"stepId": "review", "count": "2"}, {"stepId": "review", "count": None},
    {"stepId": "review", "count": 2**53}, {"stepId": "review", "count": -(2**53)},
    {"stepId": "\ud800", "count": 1},
]


@pytest.mark.parametrize("override", MALFORMED_OVERRIDES, ids=repr)
def test_a_malformed_override_cannot_be_signed(override: Any) -> None:
    """spec/signing.md section 2: anything but absent/null/false or exactly {stepId, count} has no signed form:
    the signer refuses it, and a verifier rejects it as bad-signature, whatever proof it carries."""
    event = {**EVENT, "discardLegacyAnswers": override}
    with pytest.raises((TypeError, ValueError)):
        signing_input(event, actor="alice", exp=EXP, execution_id=EXECUTION, parked_at_sequence=PARK)
    with pytest.raises((TypeError, ValueError)):
        signed(event)
    verifier = authenticator(authorize=lambda actor, e: True)
    # the signature of the same approval with no override, and one over a well-formed override
    for proof in (signed()["proof"], signed({**EVENT, "discardLegacyAnswers": OVERRIDE})["proof"]):
        assert reason(verifier.verify({**event, "proof": proof}, CONTEXT)) == "bad-signature"


@pytest.mark.parametrize(("what", "change"), [
    ("count + 1", {"discardLegacyAnswers": {**OVERRIDE, "count": 3}}),
    ("count - 1", {"discardLegacyAnswers": {**OVERRIDE, "count": 1}}),
    ("count -> 0", {"discardLegacyAnswers": {**OVERRIDE, "count": 0}}),
    ("stepId changed", {"discardLegacyAnswers": {**OVERRIDE, "stepId": "reviews"}}),
    ("stepId case", {"discardLegacyAnswers": {**OVERRIDE, "stepId": "Review"}}),
    ("removed: false", {"discardLegacyAnswers": False}),
    ("removed: null", {"discardLegacyAnswers": None}),
    ("removed: absent", None),
])
def test_an_override_changed_under_its_signature_is_rejected(what: str, change: dict[str, Any] | None) -> None:
    """ADR 0104 D2: an authenticator that signs the payload alone would let a caller alter the override under a
    valid signature; this one covers it."""
    event = signed({**EVENT, "discardLegacyAnswers": OVERRIDE})
    assert reason(authenticator().verify(event, CONTEXT)) == "granted"
    tampered = {k: v for k, v in event.items() if k != "discardLegacyAnswers"} if change is None \
        else {**event, **change}
    assert reason(authenticator().verify(tampered, CONTEXT)) == "bad-signature", what


@pytest.mark.parametrize("override", [{"stepId": "review", "count": 0}, OVERRIDE])
def test_an_override_attached_after_signing_is_rejected(override: dict[str, Any]) -> None:
    """ADR 0104 D2: attaching an override to an approval signed without one, even count 0, is rejected."""
    assert reason(authenticator().verify({**signed(), "discardLegacyAnswers": override}, CONTEXT)) == "bad-signature"


@pytest.mark.parametrize(("sent", "kept"), [
    ({}, None), ({"discardLegacyAnswers": None}, None), ({"discardLegacyAnswers": False}, None),
    ({"discardLegacyAnswers": OVERRIDE}, OVERRIDE), ({"discardLegacyAnswers": True}, True),
    ({"discardLegacyAnswers": {"stepId": ""}}, {"stepId": ""}), ({"discardLegacyAnswers": 0}, 0),
])
def test_resume_options_keep_an_override_as_sent(sent: dict[str, Any], kept: Any) -> None:
    """ADR 0104 D2: the options keep whatever override the caller sent (the runtime refuses a malformed one, the
    authenticator cannot verify it); no override is None, and the authenticator's event then has none."""
    options = ResumeOptions.from_json({"proof": {"actor": "alice"}, **sent})
    assert options.discard_legacy_answers == kept and type(options.discard_legacy_answers) is type(kept)
    event = options.event("Approval", {"approved": True})
    if kept is None:
        assert "discardLegacyAnswers" not in event
    else:
        assert event["discardLegacyAnswers"] == kept
    assert ResumeOptions().discard_legacy_answers is None


@pytest.mark.parametrize(("field", "value", "error"), [
    ("actor", "", TypeError), ("actor", None, TypeError), ("exp", None, TypeError), ("exp", True, TypeError),
    ("exp", float(EXP), TypeError), ("execution_id", None, TypeError), ("execution_id", "", TypeError),
    ("parked_at_sequence", None, TypeError), ("parked_at_sequence", True, TypeError),
    ("parked_at_sequence", 0, ValueError), ("parked_at_sequence", -1, ValueError),
])
def test_the_signer_refuses_a_missing_park_or_expiry(field: str, value: Any, error: type[Exception]) -> None:
    """ADR 0117 Consequences: signResume requires exp, executionId and parkedAtSequence."""
    arguments: dict[str, Any] = {"actor": "alice", "secret": SECRET, "exp": EXP, "execution_id": EXECUTION,
                                 "parked_at_sequence": PARK, field: value}
    with pytest.raises(error):
        sign_resume(EVENT, **arguments)


def test_the_signer_requires_every_keyword() -> None:
    with pytest.raises(TypeError):
        sign_resume(EVENT, actor="alice", secret=SECRET, exp=EXP, execution_id=EXECUTION)  # type: ignore[call-arg]


@pytest.mark.parametrize("event", [
    {"type": "Approval", "payload": {"x": math.nan}},
    {"type": "Approval", "payload": {"big": 2**53}},
    {"type": "Approval", "payload": "\ud800"},
    {"type": 7, "payload": None},
    {"type": "Approval", "payload": None, "discardLegacyAnswers": 1},
    {"type": "Approval", "payload": None, "discardLegacyAnswers": True},
    ["Approval", None],
])
def test_the_signer_refuses_an_unsignable_event(event: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        signed(event)


@pytest.mark.parametrize("secret", ["", b"", "x" * 15, b"x" * 15, "é" * 7 + "x"])
def test_the_signer_refuses_a_weak_secret(secret: str | bytes) -> None:
    """ADR 0117 D2: secrets under 16 bytes (UTF-8 length; empty included) are refused; signResume too."""
    with pytest.raises(WeakSecretError):
        signed(secret=secret)  # type: ignore[arg-type]
    assert issubclass(WeakSecretError, ValueError)


def test_sixteen_bytes_is_enough_and_bytes_equal_their_text() -> None:
    assert signed(secret="é" * 8)["proof"] == signed(secret="é".encode() * 8)["proof"]  # type: ignore[arg-type]


def test_sign_resume_returns_a_copy() -> None:
    event = {"type": "Approval", "payload": {"approved": True, "nested": {"a": [1]}}}
    before = json.dumps(event)
    result = signed(event)
    assert json.dumps(event) == before, "the caller's event is unchanged"
    result["payload"]["nested"]["a"].append(2)
    assert json.dumps(event) == before, "the signed event shares nothing with the caller's"
    assert set(result["proof"]) == {"actor", "exp", "signature"}
    assert result["proof"]["signature"] == result["proof"]["signature"].lower() and len(result["proof"]["signature"]) == 64


# ------------------------------------------------------------------ vectors


def vectors() -> list[dict[str, Any]]:
    return read_json(SPEC_ROOT / "vectors" / "signatures.json")["vectors"]


def test_the_vectors_file_is_published_with_the_package() -> None:
    document = read_json(SPEC_ROOT / "vectors" / "signatures.json")
    assert document["spec"] == "spec/signing.md"
    assert (SPEC_ROOT / "signing.md").is_file()
    assert 6 <= len(document["vectors"]) <= 10
    events = [v["event"] for v in document["vectors"]]
    assert any(isinstance(e["payload"], dict) and "viewDigest" in e["payload"] for e in events)
    # ADR 0104 D2: overrides with count 0 and 2 (vectors 3 and 10, spec/signing.md section 9)
    assert {e["discardLegacyAnswers"]["count"] for e in events if isinstance(e.get("discardLegacyAnswers"), dict)} \
        == {0, 2}
    assert [i for i, e in enumerate(events, start=1) if "discardLegacyAnswers" in e] == [3, 10]
    assert not any(e.get("discardLegacyAnswers") is True for e in events), "true has no signed form"
    assert any(not v["signingInput"].isascii() for v in document["vectors"])
    assert any(r["event"].get("discardLegacyAnswers") is True for r in document["refused"])


@pytest.mark.parametrize("vector", vectors(), ids=lambda v: v["description"][:40])
def test_vector(vector: dict[str, Any]) -> None:
    """The signer reproduces signingInput and signature; the verifier grants the event at its park."""
    park = {"actor": vector["actor"], "exp": vector["exp"], "execution_id": vector["executionId"],
            "parked_at_sequence": vector["parkedAtSequence"]}
    assert signing_input(vector["event"], **park).decode("utf-8") == vector["signingInput"]
    event = sign_resume(vector["event"], secret=vector["secret"], **park)
    assert event["proof"] == {"actor": vector["actor"], "exp": vector["exp"], "signature": vector["signature"]}
    verifier = SignedResumeAuthenticator(gates=[vector["event"]["type"]], keys={vector["actor"]: vector["secret"]},
                                         now=lambda: vector["exp"] - 1)
    context = {"executionId": vector["executionId"], "parkedAtSequence": vector["parkedAtSequence"]}
    assert verifier.verify(event, context) == Verdict.granted(vector["actor"], "signedResumeAuthenticator")
    assert reason(verifier.verify(event, {**context, "parkedAtSequence": vector["parkedAtSequence"] + 1})) \
        == "bad-signature"


def refused() -> list[dict[str, Any]]:
    return read_json(SPEC_ROOT / "vectors" / "signatures.json")["refused"]


@pytest.mark.parametrize("entry", refused(), ids=lambda r: r["description"][:40])
def test_refused_vector(entry: dict[str, Any]) -> None:
    """spec/signing.md section 9: no signer signs these, and a verifier rejects them as bad-signature, though
    the signature is one a correct signer once produced (pre-0104 `true`) or produces (vector 1, no override)."""
    park = {"actor": entry["actor"], "exp": entry["exp"], "execution_id": entry["executionId"],
            "parked_at_sequence": entry["parkedAtSequence"]}
    with pytest.raises((TypeError, ValueError)):
        signing_input(entry["event"], **park)
    with pytest.raises((TypeError, ValueError)):
        sign_resume(entry["event"], secret=entry["secret"], **park)
    if "signingInput" in entry:  # the pre-0104 text really is what the signature covers
        assert hmac.new(entry["secret"].encode(), entry["signingInput"].encode(), hashlib.sha256).hexdigest() \
            == entry["signature"]
    verifier = SignedResumeAuthenticator(gates=[entry["event"]["type"]], keys={entry["actor"]: entry["secret"]},
                                         now=lambda: entry["exp"] - 1)
    proof = {"actor": entry["actor"], "exp": entry["exp"], "signature": entry["signature"]}
    event = {**entry["event"], "proof": proof}
    context = {"executionId": entry["executionId"], "parkedAtSequence": entry["parkedAtSequence"]}
    assert reason(verifier.verify(event, context)) == "bad-signature"
    without = {k: v for k, v in event.items() if k != "discardLegacyAnswers"}
    expected = "bad-signature" if "signingInput" in entry else "granted"  # vector 1's signature, no override
    assert reason(verifier.verify(without, context)) == expected


# ------------------------------------------------------- approver helpers


def parked(condition: dict[str, Any]) -> dict[str, Any]:
    return {"sequence": 9, "status": "suspended", "suspendedOn": condition}


@pytest.mark.parametrize("digest", ["v2:" + "cd" * 32, "v1:0123456789abcdef"])
def test_answer_approval_echoes_the_parked_digest(digest: str) -> None:
    """ADR 0117 D1: built from the PARKED state, echoing its digest exactly (v1: or v2:)."""
    decision = {"approved": True, "viewDigest": "v2:stale", "note": {"by": "ui"}}
    event = answer_approval(parked({"on": "ToolApproval", "viewDigest": digest}), decision)
    assert event == {"type": "ToolApproval", "payload": {"approved": True, "note": {"by": "ui"}, "viewDigest": digest}}
    event["payload"]["note"]["by"] = "changed"
    assert decision == {"approved": True, "viewDigest": "v2:stale", "note": {"by": "ui"}}, "the decision is not shared"


def test_answer_approval_without_a_digest() -> None:
    assert answer_approval(parked({"on": "Approval"}), {"approved": False}) == \
        {"type": "Approval", "payload": {"approved": False}}


def test_answer_approval_from_a_fold_state() -> None:
    state = State(sequence=3, status="suspended", suspended_on={"on": "Approval", "viewDigest": view_digest([1])})
    assert answer_approval(state, {"approved": True})["payload"]["viewDigest"] == view_digest([1])


@pytest.mark.parametrize("state", [
    {"status": "running", "suspendedOn": None},
    {"status": "completed", "suspendedOn": {"on": "Approval"}},
    {"status": "suspended", "suspendedOn": None},
    {"status": "suspended", "suspendedOn": {"viewDigest": "v2:x"}},
    {},
])
def test_answer_approval_needs_a_parked_state(state: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        answer_approval(state, {"approved": True})


def test_answer_sign_verify_round_trip() -> None:
    """The approver's path: answer the parked state, sign it for the park, and the verifier grants it."""
    state = parked({"on": "Approval", "viewDigest": view_digest({"tool": "pay", "input": {"amount": 5}})})
    event = signed(answer_approval(state, {"approved": True}))
    assert reason(authenticator().verify(event, CONTEXT)) == "granted"


def test_parked_at_sequence_is_the_newest_park_not_the_tip() -> None:
    """ADR 0117 Round 2: denials and parallel siblings trail the park; the tip is never bound."""
    events = [
        {"seq": 1, "type": "EXECUTION_STARTED", "payload": {}},
        {"seq": 2, "type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "Approval"}}},
        {"seq": 3, "type": "EXECUTION_RESUMED", "payload": {"approved": False}},
        {"seq": 4, "type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "Approval"}}},
        {"seq": 5, "type": "DECISION_RECORDED", "payload": {"decisionId": "d"}},
        {"seq": 6, "type": "STEP_COMPLETED", "payload": {}},
    ]
    assert parked_at_sequence(events) == 4
    assert parked_at_sequence(list(reversed(events))) == 4
    assert parked_at_sequence(events[:3]) == 2
    assert parked_at_sequence(events[:1]) is None
    assert parked_at_sequence([]) is None
    assert parked_at_sequence([Event("e", e["seq"], e["type"], e["payload"]) for e in events]) == 4
    assert parked_at_sequence([{"seq": "9", "type": "EXECUTION_SUSPENDED"}, {"type": "EXECUTION_SUSPENDED"},
                               "garbage", {"seq": True, "type": "EXECUTION_SUSPENDED"}]) is None
