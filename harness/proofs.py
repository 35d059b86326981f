"""The one place the harness gets approval proofs from (ADR 0117 D2).

The harness writes every approval it sends in spec/signing.md's notation: a proof
`{actor, exp, signature}` over the whole event and the one park it answers. That
notation is what scripts, regression logs and the reference's expectations hold,
and what the approvals.* oracle (properties/signing.py) judges. An implementation
that declares the feature "signing" verifies proofs of its own format instead: as
each resume is dispatched, `for_kernel` swaps the harness's proof for the one the
implementation's own `sign(claim)` returns for the same claim, so the verdict the
oracle computes for the spec proof is the verdict the implementation owes for its
own. A proof the harness did not sign (a tampered one, or the implementation's own
bytes altered by the tampering corpus) is sent exactly as it is.

ADR 0117 D2 names the signed fields, not their encoding; spec/signing.md's bytes
are the profile choice proof-wire-format (spec/profiles.toml), used only for
implementations that do not sign themselves."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from loomcheck.fuzz.tampering import other_character
from loomcheck.properties import signing as spec
from loomcheck.spec.canonical import CanonicalError, canonical_json

if TYPE_CHECKING:
    from loomcheck.harness.session import Session

FEATURE = "signing"


@dataclass(frozen=True)
class Claim:
    """What an approver signs (ADR 0117 D2): the event, its override, who, until when, and the park."""

    execution: str
    parked_at: int
    actor: str
    exp: int
    event_type: str
    payload: Any
    discard: Any = False  # ADR 0104 D2: false, or the override {stepId, count}

    def to_json(self) -> dict[str, Any]:
        return {"executionId": self.execution, "parkedAtSequence": self.parked_at, "actor": self.actor,
                "exp": self.exp, "event": {"type": self.event_type, "payload": self.payload},
                "discardLegacyAnswers": self.discard if self.discard is not None else False}


def signs_itself(features: frozenset[str] | set[str]) -> bool:
    return FEATURE in features


def sign(session: "Session", claim: Claim, secret: str) -> dict[str, Any] | None:
    """The harness's proof for `claim`, signed with `secret` (spec/signing.md), or None when the
    claim has no canonical form. Remembered with its claim, so that an implementation that signs
    its own proofs is handed its own for the same claim (`for_kernel`)."""
    proof = spec.sign(claim.event_type, claim.payload, actor=claim.actor, secret=secret, exp=claim.exp,
                      execution=claim.execution, parked_at=claim.parked_at, discard=claim.discard)
    if proof is not None:
        session.claims[_key(proof)] = (claim, secret)
    return proof


def _key(proof: Any) -> str | None:
    try:
        return canonical_json(proof)
    except (CanonicalError, TypeError, ValueError, RecursionError):
        return None


def _configured(session: "Session", actor: Any) -> list[str]:
    keys = (session.trace.security.get("authenticator") or {}).get("keys") or {}
    return spec.secrets_of(keys, actor) if isinstance(keys, dict) and isinstance(actor, str) else []


def _claim_of(session: "Session", event_type: str, payload: Any, options: dict[str, Any],
              execution: str) -> tuple[Claim, str] | None:
    """The claim a proof of the harness's was signed for: remembered when the harness signed it,
    else (a regression log's proof) found by verifying it at the execution's current park."""
    proof = options.get("proof")
    key = _key(proof)
    if key is not None and key in session.claims:
        return session.claims[key]
    if not isinstance(proof, dict) or type(proof.get("exp")) is not int or not isinstance(proof.get("actor"), str):
        return None
    parked_at = session.parked_at_sequence(execution)
    if parked_at is None:
        return None
    claim = Claim(execution, parked_at, proof["actor"], proof["exp"], event_type, payload,
                  options.get("discardLegacyAnswers") or False)
    secret = signer_of(session, claim, proof)
    return (claim, secret) if secret is not None else None


def signer_of(session: "Session", claim: Claim, proof: dict[str, Any]) -> str | None:
    """The configured secret of the claim's actor under which spec/signing.md's proof for `claim`
    is `proof`, or None: a proof in the harness's notation, told from a forgery."""
    for secret in _configured(session, claim.actor):
        if spec.sign(claim.event_type, claim.payload, actor=claim.actor, secret=secret, exp=claim.exp,
                     execution=claim.execution, parked_at=claim.parked_at, discard=claim.discard) == proof:
            return secret
    return None


def for_kernel(session: "Session", event_type: str, payload: Any, options: dict[str, Any] | None,
               execution: str) -> dict[str, Any] | None:
    """The resume's options as the implementation must receive them: unchanged unless it signs
    its own proofs and the proof is one the harness signed; then the implementation's own proof
    for the same claim. The claim's secret not being one the implementation was configured with
    (a forgery, in the harness's notation) becomes the implementation's proof with a byte altered:
    its signer only signs with the keys it holds."""
    if not signs_itself(session.features) or not options or not isinstance(options.get("proof"), dict):
        return options
    found = _claim_of(session, event_type, payload, options, execution)
    if found is None:
        return options
    claim, secret = found
    own = session.sign(claim.to_json())
    if own is None:
        return options  # its signer will not sign it: its verifier sees a proof it cannot accept
    if secret not in _configured(session, claim.actor):
        own = forged(own)
    return {**options, "proof": own}


def forged(proof: dict[str, Any]) -> dict[str, Any]:
    """`proof` with the first character of its longest string member changed (its MAC, most likely):
    what a signer holding another key would have produced, as far as a verifier can tell. The first,
    as the tampering corpus does: it always changes the value spelled, where a last base64
    character may carry only bits a decoder drops."""
    strings = sorted((k for k, v in proof.items() if isinstance(v, str) and v), key=lambda k: (-len(proof[k]), k))
    if not strings:
        return {**proof, "forged": True}
    name = strings[0]
    value = proof[name]
    return {**proof, name: other_character(value[0]) + value[1:]}


def with_own_proof(session: "Session", op: Any) -> Any:
    """A Resume or ResumeAs as the implementation must receive it (`for_kernel`)."""
    options = getattr(op, "options", None)
    if not options:
        return op
    handed = for_kernel(session, op.type, op.payload, options, op.execution)
    return op if handed is options else replace(op, options=handed)


def signed_equivalent(session: "Session", event_type: str, payload: Any, options: dict[str, Any], execution: str,
                      parked_at: int) -> bool:
    """Whether spec/signing.md would grant this proof as it stands: an alteration its signed fields
    do not see (an added member, say) is no tampering of a kernel whose own proofs are spec/signing.md's."""
    return spec.rejection(session.trace.security, session.trace.now, event_type, payload, options, execution,
                          parked_at) is None
