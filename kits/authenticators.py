"""The resume authenticator conformance kit (ADR 0117 D2): the battery every
ResumeAuthenticator must pass, one table of cases driven by pytest
(`AuthenticatorConformance`) or without it (`run_battery`). Its tamperings are the published
vectors, spec/vectors/tampered-approvals.json; how to run it, and what an implementation must
provide: docs/authenticator-kit.md."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loomcheck.kits.authenticator_subject import (
    ALICE, ALICE_SECRET, BOB, BOB_SECRET, EVENT, EXP, NOW, Make, Sign, Subject, field_of, hmac_proof,
)
from loomcheck.reference.approvals import sign_resume
from loomcheck.spec.approval_edits import edited, tampering_vectors

__all__ = ["AuthenticatorConformance", "CASES", "Case", "Subject", "run_battery"]

HOSTILE_GATES = ("__proto__", "constructor", "toString", "__class__", "__init__", "get", "keys", "", "approval")


@dataclass(frozen=True)
class Case:
    name: str
    rule: str          # the ADR 0117 D2 rule the case checks: the test's docstring
    check: Callable[[Subject], None]


CASES: list[Case] = []


def case(name: str, rule: str) -> Callable[[Callable[[Subject], None]], Callable[[Subject], None]]:
    def register(check: Callable[[Subject], None]) -> Callable[[Subject], None]:
        assert name not in {c.name for c in CASES}, f"duplicate case {name}"
        CASES.append(Case(name, rule, check))
        return check
    return register


# ------------------------------------------------------------ behaviour


@case("valid-approval-granted",
      "D2: a proof over the whole event and its park, by a known actor, before exp, is granted, "
      "with the signer as actor and the authenticator's name as verifiedBy.")
def _valid(s: Subject) -> None:
    authenticator = s.authenticator()
    verdict = s.grants(authenticator, s.signed(), ALICE, "alice")
    verified_by = field_of(verdict, "verified_by")
    assert isinstance(verified_by, str) and verified_by, f"verifiedBy is {verified_by!r}"
    if s.exact_reasons:
        assert verified_by == "signedResumeAuthenticator", f"verifiedBy is {verified_by!r}"
    if hasattr(verdict, "evidence"):
        assert verdict.evidence() == {"actor": ALICE, "verifiedBy": verified_by}, verdict.evidence()
    s.grants(authenticator, s.signed(actor=BOB, secret=BOB_SECRET), BOB, "bob")
    s.grants(authenticator, s.signed({"type": "Review", "payload": None}), ALICE, "another gate, null payload")


@case("expiry-at-verify-time",
      "D2: expiry is judged by now() at each verify, not once at construction: exp > now is not expired.")
def _expiry_clock(s: Subject) -> None:
    s.grants(s.authenticator(), s.signed(exp=NOW + 1), ALICE, "exp == now + 1")
    clock = [NOW]
    authenticator = s.authenticator(now=lambda: clock[0])
    event = s.signed()
    s.grants(authenticator, event, ALICE, "before exp")
    clock[0] = EXP
    s.rejects(authenticator, event, "expired", "the clock reached exp")


@case("no-context", "D2: the context is optional in the signature of verify, and without one it rejects.")
def _no_context(s: Subject) -> None:
    s.expect(s.authenticator(), s.signed(), None, "rejected", "no-park-context", "verify(event)",
             pass_context=False)


@case("not-authorized", "D2: it rejects an actor authorize does not allow; authorize sees the verified actor and event.")
def _not_authorized(s: Subject) -> None:
    seen: list[tuple[Any, Any]] = []

    def authorize(actor: str, event: dict) -> bool:
        seen.append((actor, event.get("type") if isinstance(event, dict) else None))
        return actor == ALICE

    authenticator = s.authenticator(authorize=authorize)
    s.rejects(authenticator, s.signed(actor=BOB, secret=BOB_SECRET), "not-authorized", "bob")
    s.grants(authenticator, s.signed(), ALICE, "alice")
    assert (BOB, "Approval") in seen and (ALICE, "Approval") in seen, f"authorize saw {seen}"
    refusing = s.authenticator(authorize=lambda actor, event: False)
    s.rejects(refusing, s.signed(), "not-authorized", "authorize refuses everyone")


@case("actor-mismatch",
      "D2: the proof's actor must equal the calling principal's actor when the call carries one; "
      "no principal leaves the proof as the identity.")
def _actor_mismatch(s: Subject) -> None:
    authenticator = s.authenticator()
    event = s.signed()
    s.rejects(authenticator, event, "actor-mismatch", "principal bob, proof alice",
              context=s.context(principal={"actor": BOB}))
    s.grants(authenticator, event, ALICE, "principal alice", context=s.context(principal={"actor": ALICE}))
    s.grants(authenticator, event, ALICE, "no principal", context=s.context(principal=None))


@case("require-actor-false",
      "D2: requireActor false overrides the principal check: the proof alone is the identity, and it is recorded.")
def _require_actor_false(s: Subject) -> None:
    authenticator = s.authenticator(require_actor=False)
    s.grants(authenticator, s.signed(), ALICE, "principal bob, proof alice",
             context=s.context(principal={"actor": BOB}))


@case("key-rotation", "D2: keys may give several secrets for rotation: any of them verifies, a retired one does not.")
def _key_rotation(s: Subject) -> None:
    new, old, retired = "alice-secret-2027-new-key", ALICE_SECRET, "alice-secret-2025-retired"
    record = s.authenticator(keys={ALICE: [new, old], BOB: BOB_SECRET})
    function = s.authenticator(keys=lambda actor: [new, old] if actor == ALICE else None)
    for what, authenticator in (("record", record), ("function", function)):
        s.grants(authenticator, s.signed(secret=new), ALICE, f"{what}: the new secret")
        s.grants(authenticator, s.signed(secret=old), ALICE, f"{what}: the old secret")
        s.rejects(authenticator, s.signed(secret=retired), "bad-signature", f"{what}: a retired secret")


@case("weak-secret-record",
      "D2: secrets under 16 bytes are refused at construction for a record (UTF-8 bytes, not characters).")
def _weak_record(s: Subject) -> None:
    s.refuses_construction({ALICE: "x" * 15}, "a 15-byte secret")
    s.refuses_construction({ALICE: "é" * 7 + "x"}, "8 characters, 15 UTF-8 bytes")
    s.refuses_construction({ALICE: [ALICE_SECRET, "y" * 15]}, "a 15-byte secret among rotated ones")
    s.refuses_construction({ALICE: ALICE_SECRET, BOB: "z" * 15}, "one actor's 15-byte secret")
    for what, secret in (("16 bytes", "0123456789abcdef"), ("8 characters, 16 UTF-8 bytes", "é" * 8)):
        s.grants(s.authenticator(keys={ALICE: secret}), s.signed(secret=secret), ALICE, what)


@case("weak-secret-function", "D2: secrets under 16 bytes are refused at lookup for a function: the proof rejects.")
def _weak_function(s: Subject) -> None:
    weak = b"w" * 15
    authenticator = s.authenticator(keys=lambda actor: weak.decode() if actor == ALICE else None)
    s.rejects(authenticator, hmac_proof(EVENT, actor=ALICE, secret=weak), "weak-secret", "signed with it")


@case("empty-secret", "D2: the empty secret is refused: at construction for a record, at lookup for a function.")
def _empty_secret(s: Subject) -> None:
    s.refuses_construction({ALICE: ""}, "an empty secret")
    s.refuses_construction({ALICE: b""}, "an empty bytes secret")
    authenticator = s.authenticator(keys=lambda actor: "" if actor == ALICE else None)
    s.rejects(authenticator, hmac_proof(EVENT, actor=ALICE, secret=b""), "weak-secret", "signed with it")


@case("gates-not-listed",
      "D2: gates not in gates are not-applicable; a hostile name such as __proto__ is just not listed.")
def _not_listed(s: Subject) -> None:
    authenticator = s.authenticator()
    for gate in ("Other", "APPROVAL", *HOSTILE_GATES):
        s.expect(authenticator, {"type": gate, "payload": {"approved": True}}, s.context(), "not-applicable",
                 None, f"unsigned {gate!r}")
        if hasattr(authenticator, "applies_to"):
            assert authenticator.applies_to(gate) is False, f"applies_to({gate!r}) is not False"
    for gate in ("Approval", "Review"):
        if hasattr(authenticator, "applies_to"):
            assert authenticator.applies_to(gate) is True, f"applies_to({gate!r}) is not True"


@case("context-extra-keys", "D2: the SPI's context is additive: keys an authenticator does not know are tolerated.")
def _context_extra(s: Subject) -> None:
    context = s.context(tenant="acme", traceId="t-1", principal={"actor": ALICE, "roles": ["approver"]})
    s.grants(s.authenticator(), s.signed(), ALICE, "extra context keys", context=context)


# ------------------------------------------------------------- vectors


def _vector_case(category: str) -> Callable[[Subject], None]:
    """Every vector of `category`, in every group: the group's approval signed by the subject's
    signer is granted (else the rejections prove nothing); each tampering of it is rejected."""
    def check(s: Subject) -> None:
        for group in tampering_vectors()["groups"]:
            config, signed = group["authenticator"], group["signed"]
            authenticator = s.authenticator(keys=config["keys"], gates=tuple(config["gates"]),
                                            now=lambda now=config["now"]: now)
            fields = {"actor": signed["actor"], "secret": signed["secret"], "exp": signed["exp"],
                      "execution_id": signed["executionId"], "parked_at_sequence": signed["parkedAtSequence"]}
            s.grants(authenticator, s.sign(copy.deepcopy(signed["event"]), **fields), signed["actor"],
                     f"{group['description']}, untampered", context=group["context"])
            for number, vector in enumerate(v for v in group["tampered"] if v["category"] == category):
                event = edited(s.sign(copy.deepcopy(signed["event"]), **{**fields, **vector.get("sign", {})}),
                               vector["edits"])
                s.rejects(authenticator, event, vector["reason"], f"{group['description']}, {category}[{number}]",
                          context=vector["context"])
    return check


for _category, _rule in tampering_vectors()["categories"].items():
    case(_category, _rule)(_vector_case(_category))


# ---------------------------------------------------------- two drivers


def run_battery(make: Make, sign: Sign | None = None, *, exact_reasons: bool = True) -> list[tuple[str, bool, str]]:
    """Every case without pytest: (case, passed, detail) in CASES order. `make` and
    `sign` have the signatures of AuthenticatorConformance.make_authenticator and .sign."""
    subject = Subject(make=make, sign=sign or sign_resume, exact_reasons=exact_reasons)
    results: list[tuple[str, bool, str]] = []
    for entry in CASES:
        try:
            entry.check(subject)
        except AssertionError as exc:
            results.append((entry.name, False, str(exc) or "assertion failed"))
        except Exception as exc:  # noqa: BLE001 - an implementation's crash is a failed case, not ours
            results.append((entry.name, False, f"raised {type(exc).__name__}: {exc}"))
        else:
            results.append((entry.name, True, ""))
    return results


class AuthenticatorConformance:
    """Subclass as ``Test<Something>`` and implement `make_authenticator`. One test
    method per case in CASES (docs/authenticator-kit.md)."""

    exact_reasons: bool = True  # assert the reference's reason strings too (spec/signing.md)

    def make_authenticator(self, *, gates: list[str], keys: Any, now: Callable[[], int], authorize: Any = None,
                           require_actor: bool = True) -> Any:
        """A new authenticator. Must be overridden."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_authenticator()")

    def sign(self, event: dict, *, actor: str, secret: str | bytes, exp: int, execution_id: str,
             parked_at_sequence: int) -> dict:
        """A copy of `event` with its proof. Default: the reference `sign_resume`."""
        return sign_resume(event, actor=actor, secret=secret, exp=exp, execution_id=execution_id,
                           parked_at_sequence=parked_at_sequence)

    def subject(self) -> Subject:
        return Subject(make=self.make_authenticator, sign=self.sign, exact_reasons=self.exact_reasons)


def _test_method(entry: Case) -> Callable[[AuthenticatorConformance], None]:
    def test(self: AuthenticatorConformance) -> None:
        entry.check(self.subject())
    test.__name__ = test.__qualname__ = "test_" + entry.name.replace("-", "_")
    test.__doc__ = entry.rule
    return test


for _entry in CASES:
    setattr(AuthenticatorConformance, "test_" + _entry.name.replace("-", "_"), _test_method(_entry))
del _entry, _category, _rule
