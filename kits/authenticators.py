"""The resume authenticator conformance kit (ADR 0117 D2): the battery every
ResumeAuthenticator must pass, as one table of cases driven two ways.

With pytest, subclass `AuthenticatorConformance` in a test module (the class name
must start with ``Test`` so that pytest collects it)::

    from loomcheck.kits.authenticators import AuthenticatorConformance

    class TestMyAuthenticator(AuthenticatorConformance):
        exact_reasons = False          # my rejections use my own reason strings

        def make_authenticator(self, *, gates, keys, now, authorize=None, require_actor=True):
            return MyAuthenticator(gates=gates, keys=keys, now=now, authorize=authorize,
                                   require_actor=require_actor)

Without pytest, `run_battery(make, sign)` runs the same cases and returns
`(case, passed, detail)` rows; the CLI reports them.

What an implementation must provide: `verify(event, context=None)` returning a
verdict with `status` ("granted" / "rejected" / "not-applicable"), `reason`,
`actor` and `verified_by` (attributes, or keys of a dict); `applies_to(type)` is
checked when it exists. `make_authenticator` gets `keys` as a record (actor ->
secret or list of secrets) or as a function of the actor, and `now` as a function
returning milliseconds since the epoch. Construction with a record holding a
secret under 16 bytes must raise.

Proofs: by default the kit signs with the reference `sign_resume` (spec/signing.md).
An implementation whose signature is computed differently overrides `sign`; the
kit still tampers with `proof["actor"]`, `proof["exp"]` and `proof["signature"]`,
so the proof must carry those three fields. The two weak-secret lookup cases sign
with the reference HMAC directly (no signer accepts a weak secret); they reject
either way, but their reason is only meaningful in the reference format.

Reasons: every case asserts the verdict's status. `exact_reasons` (True by
default, which is right for the reference and for kernels that adopt its reason
strings, spec/signing.md) also asserts the reason; set it False when yours differ.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loomcheck.reference.approvals import WeakSecretError, sign_resume, signing_input

__all__ = ["AuthenticatorConformance", "CASES", "Case", "Subject", "run_battery"]

Make = Callable[..., Any]
Sign = Callable[..., dict]

# ------------------------------------------------------------------ fixtures

NOW = 1_800_000_000_000          # ms since the epoch (2027-01-15)
EXP = NOW + 5 * 60_000           # a five-minute approval
EXECUTION = "exec-approvals-1"
PARK = 7                         # the seq of the parking EXECUTION_SUSPENDED
GATES = ("Approval", "Review")   # two listed gates, so a changed type still applies
DIGEST = "v2:" + "3f" * 32
EVENT: dict[str, Any] = {"type": "Approval",
                         "payload": {"approved": True, "comment": "ship it", "viewDigest": DIGEST}}
ALICE, ALICE_SECRET = "alice", "alice-secret-0123456789"
BOB, BOB_SECRET = "bob", "bob-secret-9876543210-xyz"
KEYS: dict[str, Any] = {ALICE: ALICE_SECRET, BOB: BOB_SECRET}
HOSTILE_GATES = ("__proto__", "constructor", "toString", "__class__", "__init__", "get", "keys", "", "approval")


def _hmac_proof(event: dict, *, actor: str, secret: bytes, exp: int = EXP) -> dict:
    """A proof in the reference format, with no strength check on the secret."""
    message = signing_input(event, actor=actor, exp=exp, execution_id=EXECUTION, parked_at_sequence=PARK)
    signature = hmac.new(secret, message, hashlib.sha256).hexdigest()
    return {**copy.deepcopy(event), "proof": {"actor": actor, "exp": exp, "signature": signature}}


def _other_char(char: str) -> str:
    return "0" if char != "0" else "1"


# ------------------------------------------------------------------- subject


@dataclass(frozen=True)
class Subject:
    """The implementation under test, and the assertions the cases share."""

    make: Make
    sign: Sign = sign_resume
    exact_reasons: bool = True

    def authenticator(self, *, keys: Any = None, authorize: Any = None, require_actor: bool = True,
                      now: Callable[[], int] | None = None, gates: tuple[str, ...] = GATES) -> Any:
        return self.make(gates=list(gates), keys=KEYS if keys is None else keys, now=now or (lambda: NOW),
                         authorize=authorize, require_actor=require_actor)

    def signed(self, event: dict = EVENT, *, actor: str = ALICE, secret: str | bytes = ALICE_SECRET,
               exp: int = EXP, execution_id: str = EXECUTION, parked_at_sequence: int = PARK) -> dict:
        return self.sign(copy.deepcopy(event), actor=actor, secret=secret, exp=exp, execution_id=execution_id,
                         parked_at_sequence=parked_at_sequence)

    @staticmethod
    def context(**changes: Any) -> dict[str, Any]:
        return {"executionId": EXECUTION, "parkedAtSequence": PARK, "principal": None, **changes}

    def expect(self, authenticator: Any, event: Any, context: Any, status: str, reason: str | None = None,
               what: str = "", *, pass_context: bool = True) -> Any:
        """Verify and assert the status (and, under exact_reasons, the reason)."""
        label = f"{what}: " if what else ""
        try:
            verdict = authenticator.verify(event, context) if pass_context else authenticator.verify(event)
        except Exception as exc:
            raise AssertionError(f"{label}verify raised {type(exc).__name__}: {exc}") from None
        got_status, got_reason = _field(verdict, "status"), _field(verdict, "reason")
        assert got_status == status, f"{label}expected {status}, got {got_status} ({got_reason})"
        if reason is not None and self.exact_reasons:
            assert got_reason == reason, f"{label}expected reason {reason!r}, got {got_reason!r}"
        return verdict

    def rejects(self, authenticator: Any, event: Any, reason: str, what: str = "", context: Any = None) -> None:
        self.expect(authenticator, event, self.context() if context is None else context, "rejected", reason, what)

    def grants(self, authenticator: Any, event: Any, actor: str = ALICE, what: str = "",
               context: Any = None) -> Any:
        verdict = self.expect(authenticator, event, self.context() if context is None else context, "granted",
                              None, what)
        assert _field(verdict, "actor") == actor, f"{what}: granted to {_field(verdict, 'actor')!r}, not {actor!r}"
        return verdict

    def refuses_construction(self, keys: Any, what: str) -> None:
        try:
            self.authenticator(keys=keys)
        except WeakSecretError:
            return
        except Exception:  # noqa: BLE001 - any refusal will do for a third party
            if self.exact_reasons:
                raise AssertionError(f"{what}: refused, but not with WeakSecretError") from None
            return
        raise AssertionError(f"{what}: constructed without complaint")


def _field(verdict: Any, name: str) -> Any:
    if isinstance(verdict, dict):
        return verdict.get({"verified_by": "verifiedBy"}.get(name, name), verdict.get(name))
    return getattr(verdict, name, None)


# --------------------------------------------------------------------- cases


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


def _tampered(s: Subject, change: Callable[[dict], None], what: str) -> None:
    """A validly signed event, changed after signing, is rejected as bad-signature."""
    event = s.signed()
    change(event)
    s.rejects(s.authenticator(), event, "bad-signature", what)


@case("valid-approval-granted",
      "D2: a proof over the whole event and its park, by a known actor, before exp, is granted, "
      "with the signer as actor and the authenticator's name as verifiedBy.")
def _valid(s: Subject) -> None:
    authenticator = s.authenticator()
    verdict = s.grants(authenticator, s.signed(), ALICE, "alice")
    verified_by = _field(verdict, "verified_by")
    assert isinstance(verified_by, str) and verified_by, f"verifiedBy is {verified_by!r}"
    if s.exact_reasons:
        assert verified_by == "signedResumeAuthenticator", f"verifiedBy is {verified_by!r}"
    if hasattr(verdict, "evidence"):
        assert verdict.evidence() == {"actor": ALICE, "verifiedBy": verified_by}, verdict.evidence()
    s.grants(authenticator, s.signed(actor=BOB, secret=BOB_SECRET), BOB, "bob")
    s.grants(authenticator, s.signed({"type": "Review", "payload": None}), ALICE, "another gate, null payload")


@case("no-proof", "D2: it rejects actor-less approvals: an event with no proof at all.")
def _no_proof(s: Subject) -> None:
    s.rejects(s.authenticator(), copy.deepcopy(EVENT), "actor-missing", "no proof")


@case("actor-less", "D2: it rejects actor-less approvals: a proof without an actor (absent, null or empty).")
def _actor_less(s: Subject) -> None:
    authenticator = s.authenticator()
    for what, actor in (("absent", ...), ("null", None), ("empty", "")):
        event = s.signed()
        if actor is ...:
            del event["proof"]["actor"]
        else:
            event["proof"]["actor"] = actor
        s.rejects(authenticator, event, "actor-missing", f"actor {what}")


@case("unsigned", "D2: it rejects unsigned approvals: a proof with no signature (absent, null or empty).")
def _unsigned(s: Subject) -> None:
    authenticator = s.authenticator()
    for what, signature in (("absent", ...), ("null", None), ("empty", "")):
        event = s.signed()
        if signature is ...:
            del event["proof"]["signature"]
        else:
            event["proof"]["signature"] = signature
        s.rejects(authenticator, event, "unsigned", f"signature {what}")


@case("unknown-actor", "D2: it rejects unknown-actor approvals, validly signed or not, hostile names included.")
def _unknown_actor(s: Subject) -> None:
    authenticator = s.authenticator()
    for actor in ("carol", "Alice", "__proto__", "constructor", "__class__", "get"):
        s.rejects(authenticator, s.signed(actor=actor, secret=ALICE_SECRET), "unknown-actor", actor)


@case("forged", "D2: it rejects forged approvals: a known actor's name signed with a secret that is not theirs.")
def _forged(s: Subject) -> None:
    authenticator = s.authenticator()
    s.rejects(authenticator, s.signed(secret=BOB_SECRET), "bad-signature", "bob's secret")
    s.rejects(authenticator, s.signed(secret="an-attacker-guessed-secret"), "bad-signature", "a guessed secret")


@case("tampered-event-type", "D2: the signature covers eventType: a proof moved to another listed gate is rejected.")
def _tampered_type(s: Subject) -> None:
    _tampered(s, lambda e: e.update(type="Review"), "Approval -> Review")


@case("tampered-payload-value", "D2: the signature covers the payload: a changed value is rejected.")
def _tampered_value(s: Subject) -> None:
    _tampered(s, lambda e: e["payload"].update(approved=False), "approved true -> false")
    _tampered(s, lambda e: e["payload"].update(comment="ship it!"), "comment changed")


@case("tampered-payload-key-added", "D2: the signature covers the payload: an added key is rejected.")
def _tampered_key_added(s: Subject) -> None:
    _tampered(s, lambda e: e["payload"].update(amount=1_000_000), "amount added")


@case("tampered-payload-key-removed", "D2: the signature covers the payload: a removed key is rejected.")
def _tampered_key_removed(s: Subject) -> None:
    _tampered(s, lambda e: e["payload"].pop("comment"), "comment removed")


@case("tampered-view-digest",
      "D2: the signature covers the payload including the echoed viewDigest (D1): changed or dropped, rejected.")
def _tampered_digest(s: Subject) -> None:
    _tampered(s, lambda e: e["payload"].update(viewDigest="v2:" + "3f" * 31 + "40"), "digest changed")
    _tampered(s, lambda e: e["payload"].update(viewDigest="v1:0123456789abcdef"), "digest swapped for a v1")
    _tampered(s, lambda e: e["payload"].pop("viewDigest"), "digest dropped")


OVERRIDE: dict[str, Any] = {"stepId": "review", "count": 2}  # ADR 0104 D2: discardLegacyAnswers {stepId, count}


@case("tampered-discard-legacy-answers",
      "D2: the signature covers discardLegacyAnswers, the operator override {stepId, count} of ADR 0104 D2: "
      "attached, its count or stepId altered, or removed after signing, it is rejected.")
def _tampered_discard(s: Subject) -> None:
    # No override is signed as false, so attaching one (even count 0, "discard nothing") changes the text.
    for count in (0, 2):
        _tampered(s, lambda e, count=count: e.update(discardLegacyAnswers={"stepId": "review", "count": count}),
                  f"none -> {{stepId: review, count: {count}}}")
    authenticator = s.authenticator()
    with_override = s.signed({**EVENT, "discardLegacyAnswers": OVERRIDE})
    s.grants(authenticator, with_override, ALICE, "signed with an override")
    changes: list[tuple[str, Callable[[dict], None]]] = [
        ("count 2 -> 3", lambda e: e.update(discardLegacyAnswers={**OVERRIDE, "count": 3})),
        ("count 2 -> 0", lambda e: e.update(discardLegacyAnswers={**OVERRIDE, "count": 0})),
        ("stepId review -> approve", lambda e: e.update(discardLegacyAnswers={**OVERRIDE, "stepId": "approve"})),
        ("override -> absent", lambda e: e.pop("discardLegacyAnswers")),
        ("override -> false", lambda e: e.update(discardLegacyAnswers=False)),
        ("override -> null", lambda e: e.update(discardLegacyAnswers=None)),
    ]
    for what, change in changes:
        event = copy.deepcopy(with_override)
        change(event)
        s.rejects(authenticator, event, "bad-signature", what)


@case("tampered-actor", "D2: the signature covers the actor: a proof re-labelled as another known actor is rejected.")
def _tampered_actor(s: Subject) -> None:
    _tampered(s, lambda e: e["proof"].update(actor=BOB), "alice -> bob")


@case("tampered-exp", "D2: the signature covers the expiry: a proof whose exp was moved is rejected.")
def _tampered_exp(s: Subject) -> None:
    _tampered(s, lambda e: e["proof"].update(exp=EXP + 86_400_000), "exp a day later")
    _tampered(s, lambda e: e["proof"].update(exp=EXP - 1), "exp a millisecond earlier")


@case("tampered-signature",
      "D2: the signature is compared whole: one character changed, truncated or extended, it is rejected.")
def _tampered_signature(s: Subject) -> None:
    variants: list[tuple[str, Callable[[str], str]]] = [
        ("first character changed", lambda sig: _other_char(sig[0]) + sig[1:]),
        ("last character changed", lambda sig: sig[:-1] + _other_char(sig[-1])),
        ("middle character changed", lambda sig: sig[:len(sig) // 2] + _other_char(sig[len(sig) // 2])
         + sig[len(sig) // 2 + 1:]),
        ("last character dropped", lambda sig: sig[:-1]),
        ("truncated to half", lambda sig: sig[:len(sig) // 2]),
        ("truncated to one character", lambda sig: sig[:1]),
        ("extended", lambda sig: sig + "00"),
    ]
    for what, change in variants:
        _tampered(s, lambda e, change=change: e["proof"].update(signature=change(e["proof"]["signature"])), what)


@case("expired", "D2: exp is required and bounds a proof's life: exp <= now is expired, exp > now is not.")
def _expired(s: Subject) -> None:
    authenticator = s.authenticator()
    s.rejects(authenticator, s.signed(exp=NOW - 60_000), "expired", "a minute ago")
    s.rejects(authenticator, s.signed(exp=NOW), "expired", "exp == now")
    s.grants(authenticator, s.signed(exp=NOW + 1), ALICE, "exp == now + 1")


@case("expiry-at-verify-time", "D2: expiry is judged by now() at each verify, not once at construction.")
def _expiry_clock(s: Subject) -> None:
    clock = [NOW]
    authenticator = s.authenticator(now=lambda: clock[0])
    event = s.signed()
    s.grants(authenticator, event, ALICE, "before exp")
    clock[0] = EXP
    s.rejects(authenticator, event, "expired", "the clock reached exp")


@case("other-execution",
      "D2: the signature holds for one park of one execution: refused at another execution, including a fork "
      "(same park sequence, its own id).")
def _other_execution(s: Subject) -> None:
    authenticator = s.authenticator()
    event = s.signed()
    for other in (EXECUTION + "-fork", "exec-approvals-2", EXECUTION.upper()):
        s.rejects(authenticator, event, "bad-signature", f"presented at {other}",
                  context=s.context(executionId=other))


@case("later-park", "D2: the signature holds for one park: refused at a later park of the same gate (a loop).")
def _later_park(s: Subject) -> None:
    authenticator = s.authenticator()
    event = s.signed()
    for later in (PARK + 1, PARK + 2, PARK + 1000):
        s.rejects(authenticator, event, "bad-signature", f"parkedAtSequence {later}",
                  context=s.context(parkedAtSequence=later))
    s.rejects(authenticator, event, "bad-signature", "an earlier park", context=s.context(parkedAtSequence=PARK - 1))


@case("no-context", "D2: without a context it rejects, and the optional context is tolerated: no exception.")
def _no_context(s: Subject) -> None:
    s.expect(s.authenticator(), s.signed(), None, "rejected", "no-park-context", "verify(event)",
             pass_context=False)
    s.expect(s.authenticator(), s.signed(), None, "rejected", "no-park-context", "verify(event, None)")
    s.rejects(s.authenticator(), s.signed(), "no-park-context", "an empty context", context={})


@case("context-without-park",
      "D2: an unparked execution (a context with no parkedAtSequence) rejects; so does one with no executionId.")
def _context_without_park(s: Subject) -> None:
    authenticator = s.authenticator()
    event = s.signed()
    context = s.context()
    del context["parkedAtSequence"]
    s.rejects(authenticator, event, "no-park-context", "parkedAtSequence absent", context=context)
    s.rejects(authenticator, event, "no-park-context", "parkedAtSequence null",
              context=s.context(parkedAtSequence=None))
    context = s.context()
    del context["executionId"]
    s.rejects(authenticator, event, "no-park-context", "executionId absent", context=context)


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
    s.rejects(authenticator, _hmac_proof(EVENT, actor=ALICE, secret=weak), "weak-secret", "signed with it")


@case("empty-secret", "D2: the empty secret is refused: at construction for a record, at lookup for a function.")
def _empty_secret(s: Subject) -> None:
    s.refuses_construction({ALICE: ""}, "an empty secret")
    s.refuses_construction({ALICE: b""}, "an empty bytes secret")
    authenticator = s.authenticator(keys=lambda actor: "" if actor == ALICE else None)
    s.rejects(authenticator, _hmac_proof(EVENT, actor=ALICE, secret=b""), "weak-secret", "signed with it")


@case("gates-not-listed",
      "D2: gates not in gates are not-applicable; a hostile name such as __proto__ is just not listed.")
def _not_listed(s: Subject) -> None:
    authenticator = s.authenticator()
    for gate in ("Other", "APPROVAL", *HOSTILE_GATES):
        s.expect(authenticator, {"type": gate, "payload": {"approved": True}}, s.context(), "not-applicable",
                 None, f"unsigned {gate!r}")
        if hasattr(authenticator, "applies_to"):
            assert authenticator.applies_to(gate) is False, f"applies_to({gate!r}) is not False"
    for gate in GATES:
        if hasattr(authenticator, "applies_to"):
            assert authenticator.applies_to(gate) is True, f"applies_to({gate!r}) is not True"


@case("context-extra-keys", "D2: the SPI's context is additive: keys an authenticator does not know are tolerated.")
def _context_extra(s: Subject) -> None:
    context = s.context(tenant="acme", traceId="t-1", principal={"actor": ALICE, "roles": ["approver"]})
    s.grants(s.authenticator(), s.signed(), ALICE, "extra context keys", context=context)


@case("garbage-proof",
      "D2: a malformed proof (not an object, a signature that is not a hex string, an exp that is not an integer) "
      "is rejected, never an exception.")
def _garbage(s: Subject) -> None:
    authenticator = s.authenticator()
    valid = s.signed()

    def with_proof(proof: Any) -> dict:
        return {**copy.deepcopy(EVENT), "proof": proof}

    def changed(**fields: Any) -> dict:
        return with_proof({**valid["proof"], **fields})

    variants = [
        ("proof is a string", with_proof("alice:deadbeef"), "actor-missing"),
        ("proof is a list", with_proof([ALICE, EXP, valid["proof"]["signature"]]), "actor-missing"),
        ("actor is a number", changed(actor=42), "actor-missing"),
        ("signature is a number", changed(signature=12345), "bad-signature"),
        ("signature is a list", changed(signature=[valid["proof"]["signature"]]), "bad-signature"),
        ("signature is not hex", changed(signature="zz" * 32), "bad-signature"),
        ("signature is not ASCII", changed(signature="é" * 64), "bad-signature"),
        ("exp is a bool", changed(exp=True), "no-expiry"),
        ("exp is a string", changed(exp=str(EXP)), "no-expiry"),
        ("exp is absent", with_proof({"actor": ALICE, "signature": valid["proof"]["signature"]}), "no-expiry"),
        ("event is not an object", ["Approval", valid["proof"]], "actor-missing"),
    ]
    for what, event, reason in variants:
        s.rejects(authenticator, event, reason, what)
    s.rejects(authenticator, valid, "no-park-context", "context is a list", context=[EXECUTION, PARK])


# ------------------------------------------------------------- two drivers


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
    method per case in CASES; see the module docstring."""

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
del _entry
