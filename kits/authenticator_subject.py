"""The authenticator kit's subject: the implementation under test, how the cases build it and
sign for it, and the assertions they share; with the fixtures of the behaviour cases."""

from __future__ import annotations

import copy
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loomcheck.reference.approvals import WeakSecretError, sign_resume, signing_input

Make = Callable[..., Any]
Sign = Callable[..., dict]

NOW = 1_800_000_000_000          # ms since the epoch (2027-01-15)
EXP = NOW + 5 * 60_000           # a five-minute approval
EXECUTION = "exec-approvals-1"
PARK = 7                         # the seq of the parking EXECUTION_SUSPENDED
GATES = ("Approval", "Review")   # two listed gates
DIGEST = "v2:" + "3f" * 32
EVENT: dict[str, Any] = {"type": "Approval",
                         "payload": {"approved": True, "comment": "ship it", "viewDigest": DIGEST}}
ALICE, ALICE_SECRET = "alice", "alice-secret-0123456789"
BOB, BOB_SECRET = "bob", "bob-secret-9876543210-xyz"
KEYS: dict[str, Any] = {ALICE: ALICE_SECRET, BOB: BOB_SECRET}


def hmac_proof(event: dict, *, actor: str, secret: bytes, exp: int = EXP) -> dict:
    """A proof in the reference format, with no strength check on the secret: no signer accepts
    a weak one, so the weak-secret cases sign with the HMAC directly."""
    message = signing_input(event, actor=actor, exp=exp, execution_id=EXECUTION, parked_at_sequence=PARK)
    signature = hmac.new(secret, message, hashlib.sha256).hexdigest()
    return {**copy.deepcopy(event), "proof": {"actor": actor, "exp": exp, "signature": signature}}


def field_of(verdict: Any, name: str) -> Any:
    """A verdict's field, whether the verdict is an object or a dict (verifiedBy in camel case)."""
    if isinstance(verdict, dict):
        return verdict.get({"verified_by": "verifiedBy"}.get(name, name), verdict.get(name))
    return getattr(verdict, name, None)


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
        got_status, got_reason = field_of(verdict, "status"), field_of(verdict, "reason")
        assert got_status == status, f"{label}expected {status}, got {got_status} ({got_reason})"
        if reason is not None and self.exact_reasons:
            assert got_reason == reason, f"{label}expected reason {reason!r}, got {got_reason!r}"
        return verdict

    def rejects(self, authenticator: Any, event: Any, reason: str, what: str = "", context: Any = ...) -> None:
        """Rejected with `reason`, verified at `context` (the fixtures' park when not given; None is no context)."""
        self.expect(authenticator, event, self.context() if context is ... else context, "rejected", reason, what)

    def grants(self, authenticator: Any, event: Any, actor: str = ALICE, what: str = "",
               context: Any = None) -> Any:
        verdict = self.expect(authenticator, event, self.context() if context is None else context, "granted",
                              None, what)
        assert field_of(verdict, "actor") == actor, f"{what}: granted to {field_of(verdict, 'actor')!r}, not {actor!r}"
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
