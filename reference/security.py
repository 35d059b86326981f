"""The runtime's security posture (ADR 0117, decisions D2, D3 and D5): strict or permissive,
and the resume authenticator, if any. Composed once from a plain config; a
strict runtime without an authenticator refuses to compose unless its absence
is acknowledged in the config, visibly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from loomcheck.reference.approvals import WeakSecretError
from loomcheck.reference.authenticator import SignedResumeAuthenticator
from loomcheck.reference.errors import ConfigError


@dataclass(frozen=True)
class ResumeOptions:
    """What travels with a resume besides its type and payload."""

    proof: Any = None                 # {actor, exp, signature}, signed by the approver (ADR 0117 D2)
    principal: Any = None             # {actor}: the calling principal, when the call carries one
    # ADR 0104 D2: the operator override {stepId, count} as the caller sent it; None is no override.
    # Not validated here: the runtime refuses a malformed one, and the authenticator cannot sign it.
    discard_legacy_answers: dict[str, Any] | None = None
    system: bool = False              # the runtime's own grant: only its timer service has it (ADR 0117 D5)
    transform_state: Any = None       # resumeAs only: {name, ...} from the transform registry (ADR 0056 D1)

    @classmethod
    def from_json(cls, options: Any) -> "ResumeOptions":
        if not isinstance(options, dict):
            return cls()
        return cls(proof=options.get("proof"), principal=options.get("principal"),
                   discard_legacy_answers=_override(options.get("discardLegacyAnswers")),
                   transform_state=options.get("transformState"))

    def event(self, event_type: str, payload: Any) -> dict[str, Any]:
        """The resume event as an authenticator sees it: exactly what the caller sent."""
        event: dict[str, Any] = {"type": event_type, "payload": payload}
        if self.discard_legacy_answers is not None:
            # ADR 0104 D2: handed to the authenticator, which MUST cover it. Absent and false sign
            # identically (spec/signing.md section 2), so an event without one is left without it.
            event["discardLegacyAnswers"] = self.discard_legacy_answers
        if self.proof is not None:
            event["proof"] = self.proof
        return event


def _override(value: Any) -> Any:
    """The raw override, or None for none (absent, null, false). Malformed values are
    kept as sent, so that the runtime refuses them rather than this parser hiding them."""
    return None if value is None or value is False else value


@dataclass(frozen=True)
class Security:
    strict: bool = False
    authenticator: SignedResumeAuthenticator | None = None
    notices: tuple[str, ...] = field(default=())


def compose(config: dict[str, Any], now: Callable[[], int]) -> Security:
    """`config` = {strict?, requireResumeAuthenticator?, authenticator?: {gates, keys, requireActor?}}."""
    strict = config.get("strict") is True
    spec = config.get("authenticator")
    authenticator = None
    if spec is not None:
        try:
            authenticator = SignedResumeAuthenticator(gates=spec.get("gates") or [], keys=spec.get("keys") or {},
                                                      require_actor=spec.get("requireActor", True) is not False,
                                                      now=now)
        except WeakSecretError as exc:  # ADR 0117 D2: refused at construction for a record
            raise ConfigError("weak-secret", str(exc)) from None
    acknowledged = config.get("requireResumeAuthenticator") is False
    if strict and authenticator is None and not acknowledged:
        # ADR 0117 D3: strict cannot default one; it needs keys only the app has.
        raise ConfigError("strict-needs-authenticator",
                          "security.strict needs a resumeAuthenticator, or requireResumeAuthenticator: false "
                          "to acknowledge an app with no approval gates")
    notices = () if authenticator is not None else (  # ADR 0117 D3: the permissive notice names the gap
        "no resume authenticator: any caller of resume() approves a gate and no APPROVAL_GRANTED is recorded",)
    return Security(strict=strict, authenticator=authenticator, notices=notices)
