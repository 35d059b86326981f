"""The one place the harness gets approval proofs from (ADR 0117 D2): spec/signing.md's proofs,
or, for an implementation that signs its own (feature "signing"), its own for the same claim.
docs/contract.md, "The harness's approval proofs"."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from loomcheck.contract.script import ResumeAs
from loomcheck.contract import signing as spec
from loomcheck.contract.signing import other_character
from loomcheck.spec.canonical import CanonicalError, canonical_json



class Trace(Protocol):
    """What proofs read of a session's trace (contract/session.py's Trace has it)."""

    now: int
    security: dict[str, Any]
    erasures: dict[str, int]


class Session(Protocol):
    """What proofs need of a session (contract/session.py's Session): typed structurally, so
    the session can ask this module for proofs without the two importing each other."""

    claims: dict[str, Any]
    features: frozenset[str]
    trace: Trace

    def parked_at_sequence(self, execution: str) -> int | None: ...

    def sign(self, claim: dict[str, Any]) -> dict[str, Any] | None: ...

FEATURE = "signing"
BINDING = "operation-binding"  # the kernel verifies spec/signing.md section 10, beyond ADR 0117 D2


@dataclass(frozen=True)
class Operation:
    """What an approval is for (spec/signing.md section 10): a plain resume (`flow` None), or a
    resumeAs onto `flow` with the `transform` (transformState) its caller sends."""

    flow: str | None = None
    transform: Any = None

    @classmethod
    def of(cls, op: Any) -> "Operation":
        """The operation a Resume or ResumeAs of a script performs."""
        if not isinstance(op, ResumeAs):
            return RESUME
        return cls(op.flow, (op.options or {}).get("transformState"))

    def to_json(self) -> dict[str, Any]:
        if self.flow is None:
            return {"type": "resume"}
        return {"type": "resumeAs", "flowId": self.flow, "transformState": self.transform}


RESUME = Operation()


@dataclass(frozen=True)
class Claim:
    """What an approver signs (ADR 0117 D2): the event, its override, who, until when, and the park;
    beyond it (spec/signing.md section 10), the operation and which execution under the id it is."""

    execution: str
    parked_at: int
    actor: str
    exp: int
    event_type: str
    payload: Any
    discard: Any = False  # ADR 0104 D2: false, or the override {stepId, count}
    operation: Operation = RESUME
    incarnation: int = 1  # 1 + the erasures of the id before the approver saw the park

    @property
    def bound(self) -> spec.Binding:
        return spec.binding(self.operation.flow, self.operation.transform, self.incarnation)

    def to_json(self) -> dict[str, Any]:
        # The incarnation is not handed over: a kernel that signs itself knows which execution it holds now.
        return {"executionId": self.execution, "parkedAtSequence": self.parked_at, "actor": self.actor,
                "exp": self.exp, "event": {"type": self.event_type, "payload": self.payload},
                "discardLegacyAnswers": self.discard if self.discard is not None else False,
                "operation": self.operation.to_json()}


def signs_itself(features: frozenset[str] | set[str]) -> bool:
    return FEATURE in features


def incarnation(trace: "Trace", execution: str) -> int:
    """Which execution under the id the kernel holds now (spec/signing.md section 10)."""
    return 1 + trace.erasures.get(execution, 0)


def binding_of(trace: "Trace", op: Any) -> spec.Binding:
    """The section-10 members a Resume or ResumeAs is verified with: its operation, at the
    execution the kernel holds now. None for a plain resume of one never erased."""
    operation = Operation.of(op)
    return spec.binding(operation.flow, operation.transform, incarnation(trace, op.execution))


def same_binding(a: spec.Binding, b: spec.Binding) -> bool:
    """One signed text (numbers by value, as canonical JSON spells them)."""
    return _key(a) == _key(b) and _key(a) is not None


def sign(session: "Session", claim: Claim, secret: str) -> dict[str, Any] | None:
    """The harness's proof for `claim`, signed with `secret` (spec/signing.md), or None when the
    claim has no canonical form. Remembered with its claim, so that an implementation that signs
    its own proofs is handed its own for the same claim (`for_kernel`)."""
    proof = spec.sign(claim.event_type, claim.payload, actor=claim.actor, secret=secret, exp=claim.exp,
                      execution=claim.execution, parked_at=claim.parked_at, discard=claim.discard, bound=claim.bound)
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


def _claim_of(session: "Session", event_type: str, payload: Any, options: dict[str, Any], execution: str,
              operation: Operation = RESUME) -> tuple[Claim, str] | None:
    """The claim a proof of the harness's was signed for: remembered when the harness signed it,
    else (a regression log's proof) found by verifying it at the execution's current park, for the
    operation it is sent with or, failing that, for a plain resume (spec/signing.md section 10)."""
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
                  options.get("discardLegacyAnswers") or False, operation, incarnation(session.trace, execution))
    plain = replace(claim, operation=RESUME, incarnation=1)
    for candidate in [claim] if plain == claim else [claim, plain]:
        secret = signer_of(session, candidate, proof)
        if secret is not None:
            return candidate, secret
    return None


def signer_of(session: "Session", claim: Claim, proof: dict[str, Any]) -> str | None:
    """The configured secret of the claim's actor under which spec/signing.md's proof for `claim`
    is `proof`, or None: a proof in the harness's notation, told from a forgery."""
    for secret in _configured(session, claim.actor):
        if spec.sign(claim.event_type, claim.payload, actor=claim.actor, secret=secret, exp=claim.exp,
                     execution=claim.execution, parked_at=claim.parked_at, discard=claim.discard,
                     bound=claim.bound) == proof:
            return secret
    return None


def for_kernel(session: "Session", event_type: str, payload: Any, options: dict[str, Any] | None,
               execution: str, operation: Operation = RESUME) -> dict[str, Any] | None:
    """The resume's options as the implementation must receive them. A proof the harness did not
    sign is sent as it is. For an implementation that signs its own proofs, one the harness signed
    becomes the implementation's own proof for the same claim; the claim's secret not being one the
    implementation was configured with (a forgery, in the harness's notation) becomes the
    implementation's proof with a byte altered: its signer only signs with the keys it holds. For
    one that verifies spec/signing.md without section 10, a proof signed for exactly this operation
    becomes the same claim in ADR 0117 D2's bytes. A claim for another operation (or incarnation)
    than the one sent is handed over as signed only when it is a plain resume's, the approval whose
    reuse the extension is about (approvals.operation-bound); any other is sent as it is."""
    if not options or not isinstance(options.get("proof"), dict):
        return options
    bound = spec.binding(operation.flow, operation.transform, incarnation(session.trace, execution))
    own_format = signs_itself(session.features)
    if not own_format and (BINDING in session.features or not bound):
        return options  # it verifies the bytes the harness signs
    found = _claim_of(session, event_type, payload, options, execution, operation)
    if found is None:
        return options
    claim, secret = found
    if not same_binding(claim.bound, bound) and (not own_format or claim.bound):
        return options
    if not own_format:
        plain = spec.sign(claim.event_type, claim.payload, actor=claim.actor, secret=secret, exp=claim.exp,
                          execution=claim.execution, parked_at=claim.parked_at, discard=claim.discard)
        return {**options, "proof": plain} if plain is not None else options
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
    handed = for_kernel(session, op.type, op.payload, options, op.execution, Operation.of(op))
    return op if handed is options else replace(op, options=handed)


def signed_equivalent(session: "Session", event_type: str, payload: Any, options: dict[str, Any], execution: str,
                      parked_at: int) -> bool:
    """Whether spec/signing.md would grant this proof as it stands: an alteration its signed fields
    do not see (an added member, say) is no tampering of a kernel whose own proofs are spec/signing.md's."""
    return spec.rejection(session.trace.security, session.trace.now, event_type, payload, options, execution,
                          parked_at) is None
