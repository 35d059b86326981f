"""The reference ResumeAuthenticator (ADR 0117, decision D2): `SignedResumeAuthenticator` verifies a
signed approval (reference/approvals.py signs one) and returns a `Verdict`; `verify` never
raises, whatever it is given. The design: docs/approvals.md."""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from loomcheck.reference.approvals import JSON, KeyMaterial, Keys, is_int, json_copy, mac, secrets_of, signing_input
from loomcheck.spec.canonical import MAX_SAFE_INTEGER

__all__ = ["CHECK_ORDER", "REJECTIONS", "SignedResumeAuthenticator", "Verdict"]

REJECTIONS = ("actor-missing", "unsigned", "no-expiry", "unknown-actor", "weak-secret", "bad-signature", "expired",
              "no-park-context", "actor-mismatch", "not-authorized")

# The order `verify` checks in; the first that fails is the reason. Shape first
# (no key is looked up for a malformed proof), then the park (a proof cannot
# verify without it), then the key and the signature; only a verified proof
# learns whether it expired, and only a verified actor reaches `authorize`.
CHECK_ORDER = ("actor-missing", "unsigned", "no-expiry", "no-park-context", "unknown-actor", "weak-secret",
               "bad-signature", "expired", "actor-mismatch", "not-authorized")

_SIGNATURE = re.compile(r"[0-9a-f]{64}")  # HMAC-SHA256, lowercase hex, nothing else (spec/signing.md)


@dataclass(frozen=True)
class Verdict:
    """An authenticator's answer. `actor` and `verified_by` are set only when granted."""

    status: Literal["granted", "rejected", "not-applicable"]
    reason: str | None = None
    actor: str | None = None
    verified_by: str | None = None

    @classmethod
    def granted(cls, actor: str, verified_by: str) -> "Verdict":
        return cls("granted", actor=actor, verified_by=verified_by)

    @classmethod
    def rejected(cls, reason: str) -> "Verdict":
        return cls("rejected", reason=reason)

    @classmethod
    def not_applicable(cls) -> "Verdict":
        return cls("not-applicable")

    def evidence(self) -> dict[str, JSON]:
        """The APPROVAL_GRANTED payload: who approved, and what verified it (ADR 0117 D2)."""
        if self.status != "granted":
            raise ValueError(f"a {self.status} verdict is evidence of nothing")
        return {"actor": self.actor, "verifiedBy": self.verified_by}


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class _Rejected(Exception):
    """Internal: a check failed with `reason`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SignedResumeAuthenticator:
    """The reference ResumeAuthenticator (ADR 0117 D2): an HMAC-SHA256 over the whole
    resume event and the one park it answers.

    `gates`: the gate names (event types) it authenticates; others are not-applicable.
    `keys`: a record actor -> secret | [secrets] (checked and copied at construction:
    a weak secret raises WeakSecretError, later changes to the mapping are not seen),
    or a function actor -> secret | [secrets] | None (checked at each lookup: weak or
    unusable key material rejects as "weak-secret"; None, an empty list or an
    exception is "unknown-actor"). Several secrets are a rotation: any may verify.
    `authorize(actor, event)`: must return True for a verified actor (it gets a copy).
    `require_actor`: the proof's actor must equal the calling principal's actor when
    the call carries one; False makes the proof the only identity.
    `now()`: milliseconds since the epoch; `exp <= now()` is expired.

    `verify` checks in CHECK_ORDER and never raises."""

    name = "signedResumeAuthenticator"  # the APPROVAL_GRANTED verifiedBy

    def __init__(self, *, gates: Iterable[str], keys: Keys, authorize: Callable[[str, dict], bool] | None = None,
                 require_actor: bool = True, now: Callable[[], int] = _wall_clock_ms) -> None:
        if isinstance(gates, (str, bytes)):
            raise TypeError("gates is a collection of gate names, not one string")
        self._gates = frozenset(gates)
        if not all(isinstance(gate, str) for gate in self._gates):
            raise TypeError("every gate name must be a str")
        self._record: dict[str, tuple[bytes, ...]] | None = None
        self._lookup: Callable[[str], KeyMaterial | None] | None = None
        if isinstance(keys, Mapping):
            record: dict[str, tuple[bytes, ...]] = {}
            for actor, material in keys.items():
                if not isinstance(actor, str) or actor == "":
                    raise TypeError(f"an actor name must be a non-empty str, not {actor!r}")
                secrets = secrets_of(material)  # ADR 0117 D2: weak secrets refused at construction
                if not secrets:
                    raise ValueError(f"actor {actor!r} has no secret")
                record[actor] = secrets
            self._record = record
        elif callable(keys):
            self._lookup = keys
        else:
            raise TypeError("keys is a mapping of actor to secret(s), or a function of the actor")
        if authorize is not None and not callable(authorize):
            raise TypeError("authorize must be callable")
        if not callable(now):
            raise TypeError("now must be callable")
        self._authorize = authorize
        self._require_actor = bool(require_actor)
        self._now = now

    def applies_to(self, event_type: object) -> bool:
        """Listed gates only: own membership of a frozenset, so "__proto__" is just not listed."""
        return isinstance(event_type, str) and event_type in self._gates

    def verify(self, event: dict, context: dict | None = None) -> Verdict:
        """Granted, rejected (reason in REJECTIONS, first failing check in CHECK_ORDER)
        or not-applicable. Never raises."""
        try:
            if isinstance(event, dict) and not self.applies_to(event.get("type")):
                return Verdict.not_applicable()  # ADR 0117 D2: gates not in gates
            return Verdict.granted(self._verified_actor(event, context), self.name)
        except _Rejected as rejection:
            return Verdict.rejected(rejection.reason)
        except Exception:  # a hostile mapping, or a bug here: still a verdict, failing closed
            return Verdict.rejected("bad-signature")

    def _verified_actor(self, event: object, context: object) -> str:
        # 1. the proof's shape. A non-dict event carries no proof: fail closed.
        proof = event.get("proof") if isinstance(event, dict) else None
        if not isinstance(proof, dict) or not isinstance(proof.get("actor"), str) or proof["actor"] == "":
            raise _Rejected("actor-missing")  # ADR 0117 D2: actor-less approvals are rejected
        actor: str = proof["actor"]
        signature = proof.get("signature")
        if signature is None or signature == "":
            raise _Rejected("unsigned")  # ADR 0117 D2: so are unsigned ones
        exp = proof.get("exp")
        if not is_int(exp):  # ADR 0117 D2: exp is required; a bool is not a time, a string not a number
            raise _Rejected("no-expiry")
        # 2. the park it answers (ADR 0117 D2: without a context, or unparked, it rejects), and the
        # operation and incarnation it is presented for (spec/signing.md section 10)
        execution_id, parked_at = _park(context)  # ADR 0117 D2: one park of one execution
        resume_as, incarnation = _operation(context)
        # 3. the key, then the signature over the whole event, the park and the operation
        secrets = self._secrets_of(actor)
        if not self._signature_holds(event, signature, secrets, actor=actor, exp=exp, execution_id=execution_id,
                                     parked_at_sequence=parked_at, resume_as=resume_as, incarnation=incarnation):
            raise _Rejected("bad-signature")  # ADR 0117 D2: forged or tampered
        # 4. a verified proof: its expiry, its caller, the app's policy
        if self._expired(exp):
            raise _Rejected("expired")  # ADR 0117 D2: exp bounds a leaked signature's life
        if self._require_actor and _principal_disagrees(context, actor):
            raise _Rejected("actor-mismatch")  # ADR 0117 D2: the signer is the caller, unless requireActor is off
        if self._authorize is not None and not self._authorized(actor, event):
            raise _Rejected("not-authorized")  # ADR 0117 D2: an actor authorize does not allow
        return actor

    def _secrets_of(self, actor: str) -> tuple[bytes, ...]:
        if self._record is not None:
            secrets = self._record.get(actor)  # a plain dict's own keys only
            if secrets is None:
                raise _Rejected("unknown-actor")  # ADR 0117 D2
            return secrets
        try:
            material = self._lookup(actor)  # type: ignore[misc]
        except Exception:
            raise _Rejected("unknown-actor") from None
        if material is None or (isinstance(material, (list, tuple)) and not material):
            raise _Rejected("unknown-actor")
        try:
            return secrets_of(material)  # ADR 0117 D2: a function's secrets are checked at lookup
        except (TypeError, ValueError):
            raise _Rejected("weak-secret") from None

    @staticmethod
    def _signature_holds(event: object, signature: object, secrets: tuple[bytes, ...], **signed: Any) -> bool:
        if not isinstance(signature, str) or not _SIGNATURE.fullmatch(signature):
            return False
        try:  # ADR 0117 D2: over the whole event (the override included, ADR 0104 D2) and its park
            message = signing_input(event, **signed)  # type: ignore[arg-type]
        except (TypeError, ValueError, RecursionError):  # CanonicalError is a ValueError
            return False
        presented = signature.encode("ascii")
        # Every key is tried, so the time taken does not say which one matched.
        matches = [hmac.compare_digest(mac(secret, message).encode("ascii"), presented) for secret in secrets]
        return any(matches)

    def _expired(self, exp: int) -> bool:
        try:
            now = self._now()
        except Exception:
            return True  # no clock, no proof of freshness: fail closed
        if isinstance(now, bool) or not isinstance(now, (int, float)) or now != now:
            return True
        return exp <= now

    def _authorized(self, actor: str, event: object) -> bool:
        try:
            return self._authorize(actor, json_copy(event)) is True  # type: ignore[misc]
        except Exception:
            return False


def _park(context: object) -> tuple[str, int]:
    """(executionId, parkedAtSequence) from the verify context, or no-park-context."""
    if not isinstance(context, dict):
        raise _Rejected("no-park-context")
    execution_id = context.get("executionId")
    parked_at = context.get("parkedAtSequence")
    if not isinstance(execution_id, str) or execution_id == "" or not is_int(parked_at) or parked_at < 1:
        raise _Rejected("no-park-context")
    return execution_id, parked_at


def _operation(context: dict) -> tuple[dict[str, JSON] | None, int]:
    """(resumeAs {flowId, transformState} or None, incarnation) from the verify context: what the
    runtime is about to do with the approval (spec/signing.md section 10). Absent members are a
    plain resume of the first incarnation, as a caller of ADR 0117 D2's SPI passes; malformed
    ones are no-park-context, failing closed."""
    operation = context.get("operation")
    incarnation = context.get("incarnation", 1)
    if incarnation is None:
        incarnation = 1
    if not is_int(incarnation) or not 1 <= incarnation <= MAX_SAFE_INTEGER:
        raise _Rejected("no-park-context")
    if operation is None or operation == {"type": "resume"}:
        return None, incarnation
    if not isinstance(operation, dict) or operation.get("type") != "resumeAs" \
            or not set(operation) <= {"type", "flowId", "transformState"} \
            or not isinstance(operation.get("flowId"), str) or operation["flowId"] == "":
        raise _Rejected("no-park-context")
    return {"flowId": operation["flowId"], "transformState": operation.get("transformState")}, incarnation


def _principal_disagrees(context: dict, actor: str) -> bool:
    """ADR 0117 D2: a principal that carries an actor must be the signer. No
    principal (or one without an actor) leaves the proof as the only identity;
    a principal that is not an object fails closed."""
    principal = context.get("principal")
    if principal is None:
        return False
    if not isinstance(principal, dict):
        return True
    claimed = principal.get("actor")
    return claimed is not None and claimed != actor
