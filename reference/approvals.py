"""Signed approvals (ADR 0117 D1, D2): the reference ResumeAuthenticator and the
approver's half.

* `signing_input` / `sign_resume`: the exact bytes an approver's HMAC-SHA256
  covers (the whole resume event and the one park it answers) and the signed
  event. spec/signing.md is the normative text for other kernels and
  spec/vectors/signatures.json its published vectors.
* `SignedResumeAuthenticator`: verifies such a proof and returns a `Verdict`;
  `verify` never raises, whatever it is given.
* `answer_approval`: the resume event for a parked state, echoing the gate's
  viewDigest (D1). `parked_at_sequence`: the seq an approver signs (Round 2).
* Beyond ADR 0117 D2 (spec/signing.md section 10): a proof also binds the operation
  it answers when that is a resumeAs (its target flow and transformState), and the
  incarnation of the execution when it was re-created after erase; the verify
  context carries both (`operation`, `incarnation`). A plain resume of an
  execution never erased signs exactly D2's bytes, so ADR-only approvers and
  verifiers interoperate with it unchanged.

A resume event is a plain dict::

    {"type": str, "payload": <JSON>,
     "discardLegacyAnswers": {"stepId": str, "count": int} (absent, null or false = no override),
     "proof": {"actor": str, "exp": int, "signature": str}}

Times (`exp`, `now()`) are integer milliseconds since the epoch. Pure Python,
standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

from loomcheck.spec.canonical import MAX_DEPTH, MAX_SAFE_INTEGER, canonical_json

__all__ = [
    "MIN_SECRET_BYTES", "PURPOSE", "REJECTIONS", "CHECK_ORDER", "Secret", "Keys", "Verdict", "WeakSecretError",
    "SignedResumeAuthenticator", "signed_discard", "signing_input", "sign_resume", "answer_approval",
    "parked_at_sequence", "signed_binding",
]

JSON = Any
Secret = Union[str, bytes]
KeyMaterial = Union[Secret, Sequence[Secret]]
Keys = Union[Mapping[str, KeyMaterial], Callable[[str], Union[KeyMaterial, None]]]

PURPOSE = "loom.resume/1"   # domain separation: these bytes are a resume approval and nothing else
MIN_SECRET_BYTES = 16       # ADR 0117 D2: "Secrets under 16 bytes (empty included) are refused"
SUSPENDED = "EXECUTION_SUSPENDED"

REJECTIONS = ("actor-missing", "unsigned", "no-expiry", "unknown-actor", "weak-secret", "bad-signature", "expired",
              "no-park-context", "actor-mismatch", "not-authorized")

# The order `verify` checks in; the first that fails is the reason. Shape first
# (no key is looked up for a malformed proof), then the park (a proof cannot
# verify without it), then the key and the signature; only a verified proof
# learns whether it expired, and only a verified actor reaches `authorize`.
CHECK_ORDER = ("actor-missing", "unsigned", "no-expiry", "no-park-context", "unknown-actor", "weak-secret",
               "bad-signature", "expired", "actor-mismatch", "not-authorized")

_SIGNATURE = re.compile(r"[0-9a-f]{64}")  # HMAC-SHA256, lowercase hex, nothing else (spec/signing.md)


class WeakSecretError(ValueError):
    """A secret under 16 bytes (UTF-8 length for a str; the empty secret included). ADR 0117 D2."""


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


# ------------------------------------------------------------------ signing


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _secret_bytes(secret: object) -> bytes:
    """One secret as bytes; WeakSecretError under 16 bytes, TypeError/ValueError if it is no secret."""
    if isinstance(secret, str):
        try:
            raw = secret.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a secret must be valid Unicode text (it has an unpaired surrogate)") from None
    elif isinstance(secret, (bytes, bytearray)):
        raw = bytes(secret)
    else:
        raise TypeError(f"a secret is str or bytes, not {type(secret).__name__}")
    if len(raw) < MIN_SECRET_BYTES:  # ADR 0117 D2
        raise WeakSecretError(f"a secret of {len(raw)} bytes; at least {MIN_SECRET_BYTES} are required")
    return raw


def _secrets(material: object) -> tuple[bytes, ...]:
    """An actor's secrets: one, or several while a key rotates (any may verify)."""
    if isinstance(material, (str, bytes, bytearray)):
        return (_secret_bytes(material),)
    if isinstance(material, Sequence):
        return tuple(_secret_bytes(secret) for secret in material)
    raise TypeError(f"an actor's key is a secret or a list of secrets, not {type(material).__name__}")


def _require(condition: bool, error: type[Exception], message: str) -> None:
    if not condition:
        raise error(message)


_OVERRIDE_KEYS = frozenset({"stepId", "count"})


def signed_discard(value: object) -> Literal[False] | dict[str, JSON]:
    """The signed `discardLegacyAnswers` member (ADR 0104 D2, spec/signing.md section 2).

    No override (absent, so None here, null or false) is signed as `false`, the
    bytes every pre-0104 vector signed. An override is exactly the object
    `{"count": int >= 0, "stepId": non-empty str}` and is signed as a fresh copy of
    it. Anything else (true, a number, a string, other keys, a bool or float count,
    a count outside ±(2^53 - 1)) has no signed form: TypeError/ValueError, so the
    signer refuses it and a verifier rejects it as bad-signature."""
    if value is None or value is False:  # identity: 0 and 0.0 are not "no override"
        return False
    # ADR 0104 D2: the override is { stepId, count }; `true` carries no step and means nothing.
    _require(isinstance(value, dict), TypeError,
             "discardLegacyAnswers is false/absent or an object {stepId, count}, not " + type(value).__name__)
    _require(set(value) == _OVERRIDE_KEYS, ValueError,
             "discardLegacyAnswers has exactly the members stepId and count, not " + repr(sorted(map(str, value))))
    step_id, count = value["stepId"], value["count"]
    _require(isinstance(step_id, str) and step_id != "", TypeError,
             "discardLegacyAnswers.stepId must be a non-empty str")
    _require(_is_int(count), TypeError, "discardLegacyAnswers.count must be an int (not a bool or a float)")
    _require(0 <= count <= MAX_SAFE_INTEGER, ValueError,
             "discardLegacyAnswers.count must be an integer in [0, 2**53 - 1]")
    return {"count": count, "stepId": step_id}


def signed_binding(resume_as: Mapping[str, JSON] | None, incarnation: int) -> dict[str, JSON]:
    """spec/signing.md section 10 (beyond ADR 0117 D2): the members that bind a proof to a
    resumeAs, `{"resumeAs": {"flowId", "transformState"}}`, and to the `incarnation`-th
    execution under its id, `{"incarnation": n}` from the second on. None of them for a plain
    resume of an execution never erased: D2's bytes exactly. TypeError/ValueError otherwise."""
    members: dict[str, JSON] = {}
    if resume_as is not None:
        _require(isinstance(resume_as, Mapping) and set(resume_as) <= {"flowId", "transformState"}, TypeError,
                 "resume_as is {flowId, transformState?}")
        flow = resume_as.get("flowId")
        _require(isinstance(flow, str) and flow != "", TypeError, "resume_as.flowId must be a non-empty str")
        # The transform as the caller sent it: what the target runs with is its outcome (ADR 0056 D1).
        members["resumeAs"] = {"flowId": flow, "transformState": resume_as.get("transformState")}
    _require(_is_int(incarnation) and 1 <= incarnation <= MAX_SAFE_INTEGER, ValueError,
             "incarnation is an integer >= 1")
    if incarnation > 1:
        members["incarnation"] = incarnation
    return members


def signing_input(event: dict, *, actor: str, exp: int, execution_id: str, parked_at_sequence: int,
                  resume_as: Mapping[str, JSON] | None = None, incarnation: int = 1) -> bytes:
    """The exact bytes the HMAC covers: canonical JSON (spec/canonical-json.md) of the
    whole event and the park it answers, UTF-8 (ADR 0117 D2); for a resumeAs or a
    re-created execution, also the operation and the incarnation (`signed_binding`).
    An absent payload is null; discardLegacyAnswers is signed as `signed_discard`
    says (ADR 0104 D2). Raises TypeError/ValueError (CanonicalError for a payload
    with no canonical form) for anything unsignable."""
    _require(isinstance(event, dict), TypeError, "a resume event is a dict")
    _require(isinstance(event.get("type"), str), TypeError, "the event's type must be a str")
    # ADR 0104 D2: the authenticator MUST cover the override, not just the payload.
    discard = signed_discard(event.get("discardLegacyAnswers"))
    _require(isinstance(actor, str) and actor != "", TypeError, "actor must be a non-empty str")
    _require(_is_int(exp), TypeError, "exp must be an int (milliseconds since the epoch)")
    _require(isinstance(execution_id, str) and execution_id != "", TypeError, "execution_id must be a non-empty str")
    _require(_is_int(parked_at_sequence), TypeError, "parked_at_sequence must be an int")
    _require(parked_at_sequence >= 1, ValueError, "parked_at_sequence is the seq of an EXECUTION_SUSPENDED: >= 1")
    signed = {
        **signed_binding(resume_as, incarnation),  # spec/signing.md section 10
        "purpose": PURPOSE,
        "eventType": event["type"],
        "payload": event.get("payload"),
        "discardLegacyAnswers": discard,
        "actor": actor,
        "exp": exp,
        "executionId": execution_id,
        "parkedAtSequence": parked_at_sequence,
    }
    return canonical_json(signed).encode("utf-8")


def _mac(secret: bytes, message: bytes) -> str:
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def sign_resume(event: dict, *, actor: str, secret: str | bytes, exp: int, execution_id: str,
                parked_at_sequence: int, resume_as: Mapping[str, JSON] | None = None, incarnation: int = 1) -> dict:
    """The approver's half: a copy of `event` carrying `proof` {actor, exp, signature}, for a
    plain resume, or for the resumeAs `resume_as` names ({flowId, transformState}); at the
    `incarnation`-th execution under its id (spec/signing.md section 10). Refuses a weak
    secret (WeakSecretError) and an unsignable event or missing park."""
    key = _secret_bytes(secret)
    message = signing_input(event, actor=actor, exp=exp, execution_id=execution_id,
                            parked_at_sequence=parked_at_sequence, resume_as=resume_as, incarnation=incarnation)
    signed = _json_copy(event)
    signed["proof"] = {"actor": actor, "exp": exp, "signature": _mac(key, message)}
    return signed


def _json_copy(value: JSON) -> JSON:
    """A deep copy of dicts and lists without recursion (a payload may be MAX_DEPTH
    deep, past Python's recursion limit for copy.deepcopy); scalars are shared."""
    if not isinstance(value, (dict, list)):
        return value
    root: JSON = {} if isinstance(value, dict) else []
    stack: list[tuple[JSON, JSON, int]] = [(value, root, 1)]
    while stack:
        source, target, level = stack.pop()
        if level > MAX_DEPTH + 1:
            raise ValueError(f"nested deeper than {MAX_DEPTH}")
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            child = item
            if isinstance(item, (dict, list)):
                child = {} if isinstance(item, dict) else []
                stack.append((item, child, level + 1))
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root


# ------------------------------------------------------------ verification


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
                secrets = _secrets(material)  # ADR 0117 D2: weak secrets refused at construction
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
                return Verdict.not_applicable()
            return Verdict.granted(self._verified_actor(event, context), self.name)
        except _Rejected as rejection:
            return Verdict.rejected(rejection.reason)
        except Exception:  # a hostile mapping, or a bug here: still a verdict, failing closed
            return Verdict.rejected("bad-signature")

    def _verified_actor(self, event: object, context: object) -> str:
        # 1. the proof's shape. A non-dict event carries no proof: fail closed.
        proof = event.get("proof") if isinstance(event, dict) else None
        if not isinstance(proof, dict) or not isinstance(proof.get("actor"), str) or proof["actor"] == "":
            raise _Rejected("actor-missing")
        actor: str = proof["actor"]
        signature = proof.get("signature")
        if signature is None or signature == "":
            raise _Rejected("unsigned")
        exp = proof.get("exp")
        if not _is_int(exp):  # a bool is not a time; a string is not a number
            raise _Rejected("no-expiry")
        # 2. the park it answers (ADR 0117 D2: without a context, or unparked, it rejects), and the
        # operation and incarnation it is presented for (spec/signing.md section 10)
        execution_id, parked_at = _park(context)
        resume_as, incarnation = _operation(context)
        # 3. the key, then the signature over the whole event, the park and the operation
        secrets = self._secrets_of(actor)
        if not self._signature_holds(event, signature, secrets, actor=actor, exp=exp, execution_id=execution_id,
                                     parked_at_sequence=parked_at, resume_as=resume_as, incarnation=incarnation):
            raise _Rejected("bad-signature")
        # 4. a verified proof: its expiry, its caller, the app's policy
        if self._expired(exp):
            raise _Rejected("expired")
        if self._require_actor and _principal_disagrees(context, actor):
            raise _Rejected("actor-mismatch")
        if self._authorize is not None and not self._authorized(actor, event):
            raise _Rejected("not-authorized")
        return actor

    def _secrets_of(self, actor: str) -> tuple[bytes, ...]:
        if self._record is not None:
            secrets = self._record.get(actor)  # a plain dict's own keys only
            if secrets is None:
                raise _Rejected("unknown-actor")
            return secrets
        try:
            material = self._lookup(actor)  # type: ignore[misc]
        except Exception:
            raise _Rejected("unknown-actor") from None
        if material is None or (isinstance(material, (list, tuple)) and not material):
            raise _Rejected("unknown-actor")
        try:
            return _secrets(material)  # ADR 0117 D2: a function's secrets are checked at lookup
        except (TypeError, ValueError):
            raise _Rejected("weak-secret") from None

    @staticmethod
    def _signature_holds(event: object, signature: object, secrets: tuple[bytes, ...], **signed: Any) -> bool:
        if not isinstance(signature, str) or not _SIGNATURE.fullmatch(signature):
            return False
        try:
            message = signing_input(event, **signed)  # type: ignore[arg-type]
        except (TypeError, ValueError, RecursionError):  # CanonicalError is a ValueError
            return False
        presented = signature.encode("ascii")
        # Every key is tried, so the time taken does not say which one matched.
        matches = [hmac.compare_digest(_mac(secret, message).encode("ascii"), presented) for secret in secrets]
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
            return self._authorize(actor, _json_copy(event)) is True  # type: ignore[misc]
        except Exception:
            return False


def _park(context: object) -> tuple[str, int]:
    """(executionId, parkedAtSequence) from the verify context, or no-park-context."""
    if not isinstance(context, dict):
        raise _Rejected("no-park-context")
    execution_id = context.get("executionId")
    parked_at = context.get("parkedAtSequence")
    if not isinstance(execution_id, str) or execution_id == "" or not _is_int(parked_at) or parked_at < 1:
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
    if not _is_int(incarnation) or not 1 <= incarnation <= MAX_SAFE_INTEGER:
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


# ------------------------------------------------------------- approver side


def answer_approval(state: Mapping[str, JSON], decision: Mapping[str, JSON]) -> dict:
    """ADR 0117 D1: the resume event for the PARKED state: `{type: on, payload:
    {...decision, viewDigest}}`, echoing the parked condition's digest exactly (v1: or
    v2:) when it declares one. Keep this state with the UI, so that "echoed" means
    "this is what I was shown". ValueError when the state is not suspended."""
    if hasattr(state, "to_json") and not isinstance(state, Mapping):
        state = state.to_json()  # a reference fold State
    if not isinstance(state, Mapping) or state.get("status") != "suspended":
        raise ValueError("only a suspended execution can be answered")
    condition = state.get("suspendedOn")
    if not isinstance(condition, Mapping) or not isinstance(condition.get("on"), str):
        raise ValueError("the state is suspended but names no gate (suspendedOn.on)")
    if not isinstance(decision, Mapping):
        raise TypeError("a decision is an object, e.g. {'approved': True}")
    payload = _json_copy(dict(decision))
    if condition.get("viewDigest") is not None:
        payload["viewDigest"] = condition["viewDigest"]
    return {"type": condition["on"], "payload": payload}


def parked_at_sequence(events: Iterable[Any]) -> int | None:
    """ADR 0117 Round 2: the seq of the newest EXECUTION_SUSPENDED among `events`
    (dicts {seq, type, payload}, or objects with those attributes), else None. Never
    the folded tip: denials and parallel siblings trail the park."""
    newest: int | None = None
    for event in events:
        kind = event.get("type") if isinstance(event, Mapping) else getattr(event, "type", None)
        seq = event.get("seq") if isinstance(event, Mapping) else getattr(event, "seq", None)
        if kind == SUSPENDED and _is_int(seq) and (newest is None or seq > newest):
            newest = seq
    return newest
