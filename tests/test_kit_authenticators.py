"""The authenticator kit against the reference, and the kit checked too: its published
vectors are rebuilt from their recipes (tests/test_catalogue.py checks they are fresh), seeded faulty authenticators (each the
reference with one fault) fail exactly the cases they should, and every tampering the fuzzer
generates is rejected by the reference and accepted by some faulty one."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

import pytest

from loomcheck.fuzz.tampering import CATEGORIES, RULES, SHAPE_CATEGORIES, event_type_variants, tamperings
from loomcheck.kits.authenticators import CASES, AuthenticatorConformance, run_battery
from loomcheck.reference.approvals import PURPOSE, sign_resume, signed_discard, signing_input
from loomcheck.reference.authenticator import SignedResumeAuthenticator, _Rejected
from loomcheck.spec.approval_edits import edited, tampering_vectors as published
from loomcheck.spec.canonical import canonical_json


def reference(**options: Any) -> SignedResumeAuthenticator:
    return SignedResumeAuthenticator(**options)


class TestSignedResumeAuthenticator(AuthenticatorConformance):
    def make_authenticator(self, *, gates: list[str], keys: Any, now: Any, authorize: Any = None,
                           require_actor: bool = True) -> Any:
        return SignedResumeAuthenticator(gates=gates, keys=keys, now=now, authorize=authorize,
                                         require_actor=require_actor)


def test_the_reference_passes_run_battery() -> None:
    results = run_battery(reference)
    assert [name for name, _, _ in results] == [case.name for case in CASES]
    assert [(name, detail) for name, passed, detail in results if not passed] == []


def test_one_test_method_per_case_with_its_rule() -> None:
    for case in CASES:
        method = getattr(AuthenticatorConformance, "test_" + case.name.replace("-", "_"))
        assert method.__doc__ == case.rule and "D2" in case.rule


# ------------------------------------------------------- the published vectors


def test_every_category_is_published_and_is_a_case() -> None:
    document = published()
    assert list(document["categories"]) == list(RULES) == [*CATEGORIES, *SHAPE_CATEGORIES]
    in_groups = {v["category"] for group in document["groups"] for v in group["tampered"]}
    assert in_groups == set(RULES)
    assert set(RULES) <= {case.name for case in CASES}


def test_each_vector_is_rebuilt_from_its_recipe() -> None:
    """An implementation with its own proofs follows the recipe; spec/signing.md's gets `event` itself."""
    for group in published()["groups"]:
        signed = group["signed"]
        fields = {"actor": signed["actor"], "secret": signed["secret"], "exp": signed["exp"],
                  "execution_id": signed["executionId"], "parked_at_sequence": signed["parkedAtSequence"]}
        assert sign_resume(signed["event"], **fields) == group["granted"]
        for vector in group["tampered"]:
            rebuilt = edited(sign_resume(signed["event"], **{**fields, **vector.get("sign", {})}), vector["edits"])
            assert rebuilt == vector["event"], vector


# --------------------------------------------- another implementation's reasons


class Renamed:
    """The reference behind another SPI spelling: dict verdicts, its own reason strings."""

    def __init__(self, **options: Any) -> None:
        self.inner = SignedResumeAuthenticator(**options)

    def applies_to(self, event_type: Any) -> bool:
        return self.inner.applies_to(event_type)

    def verify(self, event: Any, context: Any = None) -> dict[str, Any]:
        verdict = self.inner.verify(event, context)
        return {"status": verdict.status, "reason": verdict.reason and "E_" + verdict.reason.upper(),
                "actor": verdict.actor, "verifiedBy": "renamed"}


class TestRenamedReasons(AuthenticatorConformance):
    """exact_reasons = False: statuses only, as a third party with its own reasons would run it."""

    exact_reasons = False

    def make_authenticator(self, **options: Any) -> Any:
        return Renamed(**options)


def test_exact_reasons_catches_renamed_reasons() -> None:
    assert all(passed for _, passed, _ in run_battery(Renamed, exact_reasons=False))
    failed = {name for name, passed, _ in run_battery(Renamed) if not passed}
    assert "valid-approval-granted" in failed and "expired" in failed and "actor-missing" in failed


# ------------------------------------------------------- seeded faulty ones


def unbound_input(event: dict, *, actor: str, exp: int, **_park: Any) -> bytes:
    return canonical_json({"purpose": PURPOSE, "eventType": event["type"], "payload": event.get("payload"),
                           "discardLegacyAnswers": signed_discard(event.get("discardLegacyAnswers")), "actor": actor,
                           "exp": exp}).encode("utf-8")


def unbound_sign(event: dict, *, actor: str, secret: str | bytes, exp: int, execution_id: str,
                 parked_at_sequence: int) -> dict:
    key = secret.encode() if isinstance(secret, str) else secret
    signature = hmac.new(key, unbound_input(event, actor=actor, exp=exp), hashlib.sha256).hexdigest()
    return {**event, "proof": {"actor": actor, "exp": exp, "signature": signature}}


class ParkBlind(SignedResumeAuthenticator):
    """Signs and verifies without executionId/parkedAtSequence (still demands a context)."""

    @staticmethod
    def _signature_holds(event: Any, signature: Any, secrets: tuple[bytes, ...], **signed: Any) -> bool:
        try:
            message = unbound_input(event, actor=signed["actor"], exp=signed["exp"])
        except Exception:
            return False
        return isinstance(signature, str) and any(
            hmac.compare_digest(hmac.new(s, message, hashlib.sha256).hexdigest(), signature) for s in secrets)


class AcceptsWeakSecrets(SignedResumeAuthenticator):
    """Takes any secret, however short, from a record or a function."""

    def __init__(self, *, keys: Any, **options: Any) -> None:
        super().__init__(keys=lambda actor: None, **options)
        self._keys = keys

    def _secrets_of(self, actor: str) -> tuple[bytes, ...]:
        material = self._keys.get(actor) if isinstance(self._keys, Mapping) else self._keys(actor)
        if not material:
            raise _Rejected("unknown-actor")
        items = [material] if isinstance(material, (str, bytes)) else list(material)
        return tuple(s.encode() if isinstance(s, str) else s for s in items)


class NoExpiry(SignedResumeAuthenticator):
    """Never looks at exp."""

    def _expired(self, exp: int) -> bool:
        return False


class PrefixCompare(SignedResumeAuthenticator):
    """Compares the first 16 hex digits with ==: truncated or altered signatures slip through."""

    @staticmethod
    def _signature_holds(event: Any, signature: Any, secrets: tuple[bytes, ...], **signed: Any) -> bool:
        try:
            message = signing_input(event, **signed)
        except (TypeError, ValueError):
            return False
        return isinstance(signature, str) and any(
            hmac.new(s, message, hashlib.sha256).hexdigest()[:16] == signature[:16] for s in secrets)


class SkipsActorCheck(SignedResumeAuthenticator):
    """Ignores the calling principal, whatever requireActor says."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**{**options, "require_actor": False})


def _without_override(event: Any) -> Any:
    return {k: v for k, v in event.items() if k != "discardLegacyAnswers"} if isinstance(event, dict) else event


class PayloadOnly(SignedResumeAuthenticator):
    """ADR 0104 D2's warning: signs the payload but not discardLegacyAnswers, so an override can be attached or
    altered under a valid signature."""

    @staticmethod
    def _signature_holds(event: Any, signature: Any, secrets: tuple[bytes, ...], **signed: Any) -> bool:
        return SignedResumeAuthenticator._signature_holds(_without_override(event), signature, secrets, **signed)


def payload_only_sign(event: dict, **options: Any) -> dict:
    signed = sign_resume(_without_override(event), **options)
    return {**signed, **({"discardLegacyAnswers": event["discardLegacyAnswers"]}
                         if "discardLegacyAnswers" in event else {})}


class ZeroIsNone(SignedResumeAuthenticator):
    """Reads an override with count 0 ("discard nothing") as no override, so one can be attached unsigned."""

    @staticmethod
    def _signature_holds(event: Any, signature: Any, secrets: tuple[bytes, ...], **signed: Any) -> bool:
        override = event.get("discardLegacyAnswers") if isinstance(event, dict) else None
        if isinstance(override, dict) and override.get("count") == 0:
            event = _without_override(event)
        return SignedResumeAuthenticator._signature_holds(event, signature, secrets, **signed)


FAULTY: dict[str, tuple[Any, Any, set[str]]] = {
    "ignores the park binding": (ParkBlind, unbound_sign, {"other-execution", "later-park", "earlier-park"}),
    "accepts a 15-byte secret": (AcceptsWeakSecrets, None, {"weak-secret-record", "weak-secret-function",
                                                             "empty-secret"}),
    "does not check exp": (NoExpiry, None, {"expired", "expiry-at-verify-time"}),
    "compares a prefix with ==": (PrefixCompare, None, {"signature-bitflip", "signature-truncated",
                                                         "signature-extended", "signature-malformed"}),
    "skips the actor check": (SkipsActorCheck, None, {"actor-mismatch"}),
    "signs the payload, not the override": (PayloadOnly, payload_only_sign, {"discard-legacy-answers"}),
    "reads count 0 as no override": (ZeroIsNone, None, {"discard-legacy-answers"}),
}


@pytest.mark.parametrize("fault", list(FAULTY))
def test_the_battery_catches_a_faulty_authenticator(fault: str) -> None:
    make, sign, expected = FAULTY[fault]
    results = run_battery(make, sign)
    failed = {name for name, passed, _ in results if not passed}
    assert failed == expected, f"{fault}: failed {sorted(failed)}, expected {sorted(expected)}"
    for name, passed, detail in results:
        assert passed or detail, f"{name} failed without saying why"


# ---------------------------------------------------------------- tampering

ACTOR, SECRET = "alice", "alice-secret-0123456789"
OTHER = ("bob", "bob-secret-9876543210-xyz")
NOW = 1_800_000_000_000
ARGUMENTS: dict[str, Any] = {"actor": ACTOR, "secret": SECRET, "exp": NOW + 300_000, "execution_id": "exec-9",
                             "parked_at_sequence": 11, "other_actor": OTHER, "now": NOW}
EVENTS = [
    {"type": "ToolApproval", "payload": {"approved": True, "note": "ok", "edits": [{"op": "x"}, 2.5],
                                         "viewDigest": "v2:" + "9a" * 32}},
    {"type": "Approval", "payload": {"approved": False}, "discardLegacyAnswers": {"stepId": "review", "count": 2}},
    {"type": "Approval", "payload": {"approved": True}, "discardLegacyAnswers": {"stepId": "h", "count": 0}},
    {"type": "Approval", "payload": {"approved": True}, "discardLegacyAnswers": {"stepId": "h", "count": 2**53 - 1}},
    {"type": "Approval", "payload": None},
    {"type": "Approval", "payload": ["a", {"b": None}]},
]


def tampering_authenticator(event: dict, make: Any = SignedResumeAuthenticator, **options: Any) -> Any:
    return make(gates=[event["type"], *event_type_variants(event["type"])], keys={ACTOR: SECRET, OTHER[0]: OTHER[1]},
                now=lambda: NOW, **options)


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: f"{e['type']}:{type(e['payload']).__name__}:"
                                                       f"{e.get('discardLegacyAnswers', {}).get('count')}")
def test_every_tampering_is_rejected_by_the_reference(event: dict) -> None:
    verifier = tampering_authenticator(event)
    triples = list(tamperings(event, **ARGUMENTS))
    assert triples == list(tamperings(event, **ARGUMENTS)), "deterministic"
    accepted = [(category, tampered, context) for category, tampered, context in triples
                if verifier.verify(tampered, context).status != "rejected"]
    assert accepted == []
    assert {category for category, _, _ in triples} <= set(CATEGORIES)


def test_every_category_is_produced() -> None:
    produced: dict[str, int] = {}
    for category, _, _ in tamperings(EVENTS[0], **ARGUMENTS):
        produced[category] = produced.get(category, 0) + 1
    assert set(produced) == set(CATEGORIES)
    natural = set(CATEGORIES) - {"discard-legacy-answers", "actor"}
    assert all(produced[category] >= 2 for category in natural), produced


def test_the_untampered_event_is_granted() -> None:
    """The triples are tamperings of a VALID approval, not of something already broken."""
    from loomcheck.reference.approvals import sign_resume
    event = EVENTS[0]
    valid = sign_resume(event, actor=ACTOR, secret=SECRET, exp=ARGUMENTS["exp"], execution_id="exec-9",
                        parked_at_sequence=11)
    verdict = tampering_authenticator(event).verify(valid, {"executionId": "exec-9", "parkedAtSequence": 11})
    assert verdict.status == "granted"


def test_tamperings_need_a_valid_starting_point() -> None:
    with pytest.raises(ValueError):
        next(tamperings(EVENTS[0], **{**ARGUMENTS, "exp": NOW}))


def discard_tamperings(event: dict) -> list[Any]:
    return [tampered.get("discardLegacyAnswers", "absent") for category, tampered, _ in tamperings(event, **ARGUMENTS)
            if category == "discard-legacy-answers"]


def test_discard_legacy_answers_tamperings_without_an_override() -> None:
    """ADR 0104 D2: an approval signed with no override gets one attached (count 0, "discard nothing", too)."""
    attached = discard_tamperings(EVENTS[0])
    assert attached == [{"stepId": "review", "count": 0}, {"stepId": "review", "count": 1}]
    assert discard_tamperings({**EVENTS[0], "discardLegacyAnswers": None}) == attached, "null is no override"


@pytest.mark.parametrize(("count", "counts"), [(2, [3, 1, 0]), (0, [1, 2, 2**53 - 1]), (2**53 - 1, [2**53 - 2, 0])])
def test_discard_legacy_answers_tamperings_of_an_override(count: int, counts: list[int]) -> None:
    """ADR 0104 D2: a signed override has its count altered, its stepId altered, and is removed (absent, null,
    false); the reference rejects every one."""
    event = {"type": "Approval", "payload": {"approved": True}, "discardLegacyAnswers": {"stepId": "review",
                                                                                          "count": count}}
    variants = discard_tamperings(event)
    assert [v["count"] for v in variants if isinstance(v, dict) and v["stepId"] == "review"] == counts
    assert [v["stepId"] for v in variants if isinstance(v, dict) and v["count"] == count] == \
        ["reviewx", "REVIEW", "other-review", "revie"]
    assert variants[-3:] == ["absent", None, False]
    verifier = tampering_authenticator(event)
    assert all(verifier.verify(tampered, context).status == "rejected"
               for category, tampered, context in tamperings(event, **ARGUMENTS))


@pytest.mark.parametrize(("make", "categories"), [
    (NoExpiry, {"expired"}),
    (PrefixCompare, {"signature-bitflip", "signature-truncated", "signature-extended", "signature-malformed"}),
    (PayloadOnly, {"discard-legacy-answers"}),
    (ZeroIsNone, {"discard-legacy-answers"}),
])
def test_faulty_authenticators_accept_some_tamperings(make: Any, categories: set[str]) -> None:
    """The fuzzer has teeth: a faulty authenticator lets tamperings of these categories through."""
    verifier = tampering_authenticator(EVENTS[0], make)
    accepted = {category for category, tampered, context in tamperings(EVENTS[0], **ARGUMENTS)
                if verifier.verify(tampered, context).status == "granted"}
    assert accepted == categories
