"""The reference authenticator (ADR 0117 D2) as units: verdicts and evidence, the
rejection order, construction, keys, clock, principal and authorize, and that `verify`
never raises, whatever it is given. The signer: tests/test_approvals.py."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approval_fixtures import CONTEXT, EVENT, EXECUTION, EXP, NOW, PARK, SECRET, authenticator, reason, signed
from loomcheck.reference.approvals import WeakSecretError
from loomcheck.reference.authenticator import CHECK_ORDER, REJECTIONS, SignedResumeAuthenticator, Verdict
from loomcheck.spec.canonical import MAX_DEPTH, CanonicalError, depth


# ------------------------------------------------------------ verification


def test_verdicts_and_evidence() -> None:
    granted = authenticator().verify(signed(), CONTEXT)
    assert granted == Verdict("granted", actor="alice", verified_by="signedResumeAuthenticator")
    assert granted.evidence() == {"actor": "alice", "verifiedBy": "signedResumeAuthenticator"}
    assert SignedResumeAuthenticator.name == "signedResumeAuthenticator"
    for verdict in (Verdict.rejected("expired"), Verdict.not_applicable()):
        with pytest.raises(ValueError):
            verdict.evidence()
    assert set(CHECK_ORDER) == set(REJECTIONS) and len(CHECK_ORDER) == len(REJECTIONS) == 10


def with_proof(**changes: Any) -> dict:
    event = signed()
    event["proof"] = {**event["proof"], **changes}
    return event


# Two faults at once: the earlier check in CHECK_ORDER names the rejection.
PRECEDENCE: list[tuple[str, Any, Any, dict[str, Any], str]] = [
    ("no actor beats unsigned", {"proof": {"exp": EXP}}, CONTEXT, {}, "actor-missing"),
    ("unsigned beats no expiry", {"proof": {"actor": "alice"}}, CONTEXT, {}, "unsigned"),
    ("no expiry beats no context", {"proof": {"actor": "alice", "signature": "00" * 32}}, None, {}, "no-expiry"),
    ("no context beats an unknown actor", signed(actor="carol"), None, {}, "no-park-context"),
    ("an unknown actor beats a weak key", signed(actor="carol"), CONTEXT,
     {"keys": lambda actor: "weak" if actor == "alice" else None}, "unknown-actor"),
    ("a weak key beats a bad signature", with_proof(signature="00" * 32), CONTEXT,
     {"keys": lambda actor: "weak"}, "weak-secret"),
    ("a bad signature beats expired", with_proof(exp=NOW - 1), CONTEXT, {}, "bad-signature"),
    ("expired beats a principal mismatch", signed(exp=NOW), {**CONTEXT, "principal": {"actor": "bob"}}, {},
     "expired"),
    ("a principal mismatch beats authorize", signed(), {**CONTEXT, "principal": {"actor": "bob"}},
     {"authorize": lambda actor, event: False}, "actor-mismatch"),
]


@pytest.mark.parametrize(("what", "event", "context", "options", "expected"), PRECEDENCE,
                         ids=[p[0] for p in PRECEDENCE])
def test_rejection_order(what: str, event: Any, context: Any, options: dict[str, Any], expected: str) -> None:
    """spec/signing.md section 6: checks run in CHECK_ORDER; the first failing one is the reason."""
    if "proof" in event and "type" not in event:
        event = {**EVENT, **event}
    assert reason(authenticator(**options).verify(event, context)) == expected


def test_precedence_covers_every_adjacent_pair() -> None:
    expected = [p[4] for p in PRECEDENCE]
    assert expected == list(CHECK_ORDER[:-1]), "one precedence case per adjacent pair of CHECK_ORDER"


@pytest.mark.parametrize(("signature", "expected"), [
    (lambda s: s.upper(), "bad-signature"), (lambda s: " " + s, "bad-signature"), (lambda s: s + "\n", "bad-signature"),
    (lambda s: s, "granted"),
])
def test_one_spelling_of_a_signature(signature: Any, expected: str) -> None:
    """spec/signing.md section 3: exactly 64 lowercase hex digits."""
    event = signed()
    assert reason(authenticator().verify(with_proof(signature=signature(event["proof"]["signature"])), CONTEXT)) \
        == expected


def test_construction_refusals() -> None:
    with pytest.raises(TypeError):
        authenticator(gates="Approval")
    with pytest.raises(TypeError):
        authenticator(gates=["Approval", 3])
    with pytest.raises(TypeError):
        authenticator(keys=[("alice", SECRET)])
    with pytest.raises(TypeError):
        authenticator(keys={3: SECRET})
    with pytest.raises(TypeError):
        authenticator(keys={"alice": 12345678901234567890})
    with pytest.raises(ValueError):
        authenticator(keys={"alice": []})
    with pytest.raises(WeakSecretError):
        authenticator(keys={"alice": [SECRET, ""]})


def test_a_record_is_copied_at_construction() -> None:
    """The weak-secret check holds: a record changed later cannot slip a weak key in."""
    keys: dict[str, Any] = {"alice": SECRET}
    verifier = authenticator(keys=keys)
    keys["alice"] = "weak"
    keys["mallory"] = SECRET
    assert reason(verifier.verify(signed(), CONTEXT)) == "granted"
    assert reason(verifier.verify(signed(actor="mallory"), CONTEXT)) == "unknown-actor"


@pytest.mark.parametrize(("lookup", "expected"), [
    (lambda actor: None, "unknown-actor"),
    (lambda actor: [], "unknown-actor"),
    (lambda actor: 1 / 0, "unknown-actor"),
    (lambda actor: 12345, "weak-secret"),
    (lambda actor: "\ud800" * 16, "weak-secret"),
    (lambda actor: [SECRET, "weak"], "weak-secret"),
    (lambda actor: (SECRET,), "granted"),
    (lambda actor: SECRET.encode(), "granted"),
])
def test_a_key_function_fails_closed(lookup: Any, expected: str) -> None:
    """ADR 0117 D2: a function's secrets are checked at lookup; whatever it does, verify decides."""
    assert reason(authenticator(keys=lookup).verify(signed(), CONTEXT)) == expected


def test_authorize_gets_a_copy_and_must_say_true() -> None:
    def vandal(actor: str, event: dict) -> bool:
        event["payload"]["approved"] = False
        event["type"] = "Other"
        return True

    event = signed()
    before = json.dumps(event)
    assert reason(authenticator(authorize=vandal).verify(event, CONTEXT)) == "granted"
    assert json.dumps(event) == before, "authorize cannot change what the kernel appends"
    for answer in (1, "yes", None, [True]):
        assert reason(authenticator(authorize=lambda a, e, answer=answer: answer).verify(event, CONTEXT)) \
            == "not-authorized"
    assert reason(authenticator(authorize=lambda a, e: 1 / 0).verify(event, CONTEXT)) == "not-authorized"


@pytest.mark.parametrize(("now", "expected"), [
    (lambda: NOW, "granted"), (lambda: float(NOW), "granted"), (lambda: EXP, "expired"),
    (lambda: 1 / 0, "expired"), (lambda: "now", "expired"), (lambda: math.nan, "expired"), (lambda: True, "expired"),
])
def test_a_broken_clock_fails_closed(now: Any, expected: str) -> None:
    assert reason(authenticator(now=now).verify(signed(), CONTEXT)) == expected


def test_the_default_clock_is_wall_clock_milliseconds() -> None:
    verifier = SignedResumeAuthenticator(gates=["Approval"], keys={"alice": SECRET})
    wall = int(time.time() * 1000)
    assert reason(verifier.verify(signed(exp=wall + 600_000), CONTEXT)) == "granted"
    assert reason(verifier.verify(signed(exp=wall - 600_000), CONTEXT)) == "expired"


@pytest.mark.parametrize(("principal", "require_actor", "expected"), [
    (None, True, "granted"), ({"actor": "alice"}, True, "granted"), ({"actor": "bob"}, True, "actor-mismatch"),
    ({}, True, "granted"), ({"actor": None}, True, "granted"), ({"actor": 7}, True, "actor-mismatch"),
    ("alice", True, "actor-mismatch"), (["alice"], True, "actor-mismatch"),
    ({"actor": "bob"}, False, "granted"), ("garbage", False, "granted"),
])
def test_principal(principal: Any, require_actor: bool, expected: str) -> None:
    """ADR 0117 D2: a principal that carries an actor must be the signer, unless requireActor is false."""
    verifier = authenticator(require_actor=require_actor)
    assert reason(verifier.verify(signed(), {**CONTEXT, "principal": principal})) == expected


@pytest.mark.parametrize("gate", ["__proto__", "constructor", "__class__", "__init__", "get", "keys", "", "approval"])
def test_hostile_gate_names_are_not_listed(gate: str) -> None:
    verifier = authenticator()
    assert verifier.applies_to(gate) is False
    assert verifier.verify({"type": gate, "payload": None}, CONTEXT).status == "not-applicable"
    for not_a_name in (None, 3, ["Approval"], {"Approval": 1}):
        assert verifier.applies_to(not_a_name) is False


def test_a_payload_at_the_depth_limit_and_past_it() -> None:
    """spec/signing.md section 2: the signing object is itself one level, so a payload
    nested 1023 deep signs and verifies (authorize's copy included); one level more,
    the signer refuses and the verifier rejects rather than raising."""
    def nested(levels: int) -> Any:
        value: Any = "leaf"
        for _ in range(levels):
            value = [value]
        return value

    deepest = {"type": "Approval", "payload": nested(MAX_DEPTH - 1)}
    assert depth(deepest["payload"]) == MAX_DEPTH - 1
    verifier = authenticator(authorize=lambda actor, event: True)
    assert reason(verifier.verify(signed(deepest), CONTEXT)) == "granted"
    too_deep = {"type": "Approval", "payload": nested(MAX_DEPTH)}
    with pytest.raises(CanonicalError):
        signed(too_deep)
    forged = {**too_deep, "proof": signed()["proof"]}
    assert reason(verifier.verify(forged, CONTEXT)) == "bad-signature"
    assert reason(verifier.verify({**forged, "payload": nested(100_000)}, CONTEXT)) == "bad-signature"


# ------------------------------------------------------- never raises


RELEVANT_KEYS = ("type", "payload", "proof", "actor", "exp", "signature", "discardLegacyAnswers", "executionId",
                 "parkedAtSequence", "principal", "viewDigest")
LEAVES = (st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64)
          | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
          | st.sampled_from(["Approval", "alice", "bob", EXECUTION, "0" * 64, EXP, NOW, PARK, "\ud800"]))
ARBITRARY = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.sampled_from(RELEVANT_KEYS) | st.text(max_size=4), inner, max_size=5),
                         max_leaves=16)


def assert_a_verdict(verdict: Any) -> None:
    assert isinstance(verdict, Verdict)
    assert verdict.status in ("granted", "rejected", "not-applicable")
    if verdict.status == "rejected":
        assert verdict.reason in REJECTIONS


@settings(max_examples=300)
@given(event=ARBITRARY, context=ARBITRARY)
def test_verify_never_raises_on_arbitrary_input(event: Any, context: Any) -> None:
    verdict = authenticator(authorize=lambda actor, e: True).verify(event, context)
    assert_a_verdict(verdict)
    assert verdict.status != "granted", "no random input carries a valid HMAC"


@settings(max_examples=300)
@given(where=st.sampled_from(["type", "payload", "discardLegacyAnswers", "proof", "actor", "exp", "signature",
                              "executionId", "parkedAtSequence", "principal", "context"]),
       value=ARBITRARY)
def test_verify_never_raises_when_one_field_of_a_valid_approval_is_garbage(where: str, value: Any) -> None:
    event, context = signed(), dict(CONTEXT)
    if where in ("type", "payload", "discardLegacyAnswers", "proof"):
        event[where] = value
    elif where in ("actor", "exp", "signature"):
        event["proof"][where] = value
    elif where == "context":
        context = value
    else:
        context[where] = value
    verdict = authenticator().verify(event, context)
    assert_a_verdict(verdict)
    if verdict.status == "granted":  # only when the garbage happens to equal what was signed
        original = {**signed(), **signed()["proof"], **CONTEXT}
        if where == "discardLegacyAnswers":  # ADR 0104 D2: null and false are no override, as signed
            assert value is None or value is False, value
        else:
            assert where in ("principal", "context") or value == original[where], (where, value)


class Hostile(dict):  # a dict whose lookups explode
    def get(self, *args: Any) -> Any:
        raise RuntimeError("boom")


@pytest.mark.parametrize("event", [
    None, 3, "Approval", b"bytes", object(), {"type": "Approval", "proof": object()},
    {"type": "Approval", "payload": {1, 2}, "proof": {"actor": "alice", "exp": EXP, "signature": "0" * 64}},
    {"type": "Approval", "payload": math.inf, "proof": {"actor": "alice", "exp": EXP, "signature": "0" * 64}},
    {"type": "Approval", "proof": {"actor": "alice", "exp": 10**400, "signature": "0" * 64}},
    Hostile(type="Approval"),
])
def test_verify_never_raises_on_non_json(event: Any) -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for context in (CONTEXT, None, cyclic, Hostile(CONTEXT), {"executionId": object(), "parkedAtSequence": 10**400}):
        verdict = authenticator().verify(event, context)
        assert_a_verdict(verdict)
        assert verdict.status != "granted"
