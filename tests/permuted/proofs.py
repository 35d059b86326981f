"""The permuted reference's approvals, in a proof format of its own (feature "signing").

ADR 0117 D2 names what the signature covers (the event type, the payload with its echoed
viewDigest, discardLegacyAnswers, the actor, the expiry, and the park: execution and
parkedAtSequence), not how it is encoded. This kernel's proof is

    {"by": actor, "until": exp, "for": executionId, "at": parkedAtSequence,
     "mac": base64url(HMAC-SHA256(secret, its own serialisation of the claim)), no padding}

where the serialisation is a tagged JSON array with ASCII escapes (not spec/signing.md's
canonical JSON object), so no proof of the suite's format verifies here, and none of these
verifies under spec/signing.md.

`wrap(driver)` signs claims in that format (`sign`) and verifies them on resume and resume_as:
a proof whose MAC holds is translated into a spec/signing.md proof of the same claim for the
inner kernel, which then judges what it always judged (the park and execution the claim names
against the ones the resume answers, the expiry, the principal), so a seeded inner mutant keeps
its bug. A proof whose MAC does not hold is handed on as a proof the inner kernel refuses for the
same reason: no actor is actor-missing, no MAC unsigned, no integer expiry no-expiry, an actor
without keys unknown-actor, anything else bad-signature.

Its format follows ADR 0117 D2 only: it does not bind the operation nor the incarnation
(spec/signing.md section 10 is the choice it makes the other way), so a proof of its own for a
resume is translated into the inner kernel's proof for whatever resume or resumeAs it is sent
with, at the execution the inner kernel holds now, and it declares no "operation-binding"."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any, Callable

from loomcheck.contract.signing import binding, secrets_of, sign as spec_sign, signed_discard
from loomcheck.spec.canonical import CanonicalError
from loomcheck.spec.files import json_headroom

JSON = Any
TAG = "permuted-resume/1"
MEMBERS = frozenset({"by", "until", "for", "at", "mac"})
FORGED = "0" * 64  # a well-formed spec/signing.md signature no key produces: the inner kernel's bad-signature


def _normalised(value: Any) -> Any:
    """Numbers by value (ADR 0117 D2 signs the payload, and 1 and 1.0 are one JSON number)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items()}
    return value


def serialisation(actor: str, exp: int, execution: str, parked_at: int, event_type: str, payload: Any,
                  discard: Any) -> bytes:
    """This kernel's signed bytes: every field ADR 0117 D2 names, in a fixed order. Raises
    ValueError for a claim it cannot serialise."""
    try:
        override = signed_discard(discard)
    except CanonicalError as exc:
        raise ValueError(str(exc)) from None
    fields = [TAG, actor, exp, execution, parked_at, event_type, _normalised(payload), override]
    try:
        with json_headroom():
            text = json.dumps(fields, ensure_ascii=True, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ValueError(f"cannot serialise the claim: {exc}") from None
    return text.encode("ascii")


def mac(secret: str, message: bytes) -> str:
    digest = hmac.new(secret.encode("utf-8"), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def matches(given: str, expected: str) -> bool:
    """The whole MAC, in constant time (ADR 0117 D2: a tampered proof is rejected)."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


class OwnProofsDriver:
    """Any driver of the reference's security, signing and verifying approvals in this format."""

    def __init__(self, inner: Any, compare: Callable[[str, str], bool] = matches) -> None:
        self.inner = inner
        self.compare = compare
        self.keys: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def hello(self) -> Any:
        hello = self.inner.hello()
        data = hello.model_dump() if hasattr(hello, "model_dump") else dict(hello)
        features = list(data.get("features", []))
        if "security" in features and "signing" not in features:
            features.append("signing")
        features = [f for f in features if f != "operation-binding"]  # its own format binds neither
        return {**data, "features": features}

    def reset(self) -> None:
        self.keys = {}
        self.inner.reset()

    def configure(self, config: JSON) -> Any:
        outcome = self.inner.configure(config)
        if getattr(outcome, "ok", False):
            authenticator = config.get("authenticator") if isinstance(config, dict) else None
            keys = authenticator.get("keys") if isinstance(authenticator, dict) else None
            self.keys = dict(keys) if isinstance(keys, dict) else {}
        return outcome

    # -- the approver's side ------------------------------------------------------------
    def sign(self, claim: JSON) -> dict[str, JSON]:
        """ADR 0117 D2's signer, in this format: refused (as data) for an actor it holds no key
        for, or a claim it cannot serialise."""
        if not isinstance(claim, dict) or not isinstance(claim.get("event"), dict):
            return _refused("not-a-claim", "a claim is {executionId, parkedAtSequence, actor, exp, event, ...}")
        actor, exp = claim.get("actor"), claim.get("exp")
        execution, parked_at = claim.get("executionId"), claim.get("parkedAtSequence")
        if not isinstance(actor, str) or not actor or type(exp) is not int:
            return _refused("not-a-claim", "the actor must be a non-empty string and exp an integer")
        if not isinstance(execution, str) or not execution or type(parked_at) is not int or parked_at < 1:
            return _refused("no-park-context", "a claim names one park of one execution")
        secrets = secrets_of(self.keys, actor)
        if not secrets:
            return _refused("unknown-actor", f"no key for {actor!r}")
        event = claim["event"]
        try:
            message = serialisation(actor, exp, execution, parked_at, event.get("type"), event.get("payload"),
                                    claim.get("discardLegacyAnswers"))
        except ValueError as exc:
            return _refused("unsignable", str(exc))
        return {"proof": {"by": actor, "until": exp, "for": execution, "at": parked_at,
                          "mac": mac(secrets[-1], message)}}

    # -- the verifier's side --------------------------------------------------------------
    def _translated(self, event_type: str, payload: JSON, options: JSON, execution_id: str,
                    flow_id: str | None = None) -> JSON:
        if not isinstance(options, dict) or "proof" not in options:
            return options
        # What the inner kernel binds beyond ADR 0117 D2 (spec/signing.md section 10), whatever this proof was for.
        incarnation = getattr(self.inner, "incarnation", lambda execution: 1)(execution_id)
        bound = binding(flow_id, options.get("transformState"), incarnation)
        return {**options, "proof": self._spec_proof(event_type, payload, options, bound)}

    def _spec_proof(self, event_type: str, payload: JSON, options: dict[str, JSON], bound: dict[str, JSON]) -> JSON:
        """The proof the inner kernel is handed: the same claim in spec/signing.md's format when
        this format's MAC holds, else one it refuses for the reason this one fails."""
        proof = options.get("proof")
        actor = proof.get("by") if isinstance(proof, dict) else None
        if not isinstance(actor, str) or not actor:
            return {}  # actor-missing
        given, exp = proof.get("mac"), proof.get("until")
        if not isinstance(given, str) or not given:
            return {"actor": actor, "exp": exp, "signature": ""}  # unsigned
        if type(exp) is not int:
            return {"actor": actor, "exp": exp, "signature": FORGED}  # no-expiry
        refused = {"actor": actor, "exp": exp, "signature": FORGED}  # unknown-actor or bad-signature
        execution, parked_at = proof.get("for"), proof.get("at")
        if set(proof) != MEMBERS or not isinstance(execution, str) or type(parked_at) is not int:
            return refused  # one approval has one spelling: a member added or dropped is no proof of ours
        discard = options.get("discardLegacyAnswers")
        try:
            message = serialisation(actor, exp, execution, parked_at, event_type, payload, discard)
        except ValueError:
            return refused
        for secret in secrets_of(self.keys, actor):
            if self.compare(given, mac(secret, message)):
                signed = spec_sign(event_type, payload, actor=actor, secret=secret, exp=exp, execution=execution,
                                   parked_at=parked_at, discard=discard or False, bound=bound)
                return signed if signed is not None else refused
        return refused

    def resume(self, execution_id: str, event_type: str, payload: JSON, options: JSON = None) -> Any:
        options = self._translated(event_type, payload, options, execution_id)
        if options:
            return self.inner.resume(execution_id, event_type, payload, options)
        return self.inner.resume(execution_id, event_type, payload)

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: JSON = None) -> Any:
        options = self._translated(event_type, payload, options, execution_id, flow_id)
        if options:
            return self.inner.resume_as(execution_id, flow_id, event_type, payload, options)
        return self.inner.resume_as(execution_id, flow_id, event_type, payload)


def _refused(reason: str, message: str) -> dict[str, JSON]:
    return {"refused": {"reason": reason, "message": message}}


def wrap(driver: Any) -> Any:
    """The permuted driver, approving in its own proof format (tests/permuted/__init__.py)."""
    return OwnProofsDriver(driver)
