"""What the signed-approval tests share: a park, keys, an approval, and the reference
authenticator configured for them."""

from __future__ import annotations

from typing import Any

from loomcheck.reference.approvals import sign_resume
from loomcheck.reference.authenticator import SignedResumeAuthenticator, Verdict

NOW = 1_800_000_000_000
EXP = NOW + 60_000
EXECUTION, PARK = "exec-1", 4
SECRET, BOB_SECRET = "alice-secret-0123456789", "bob-secret-9876543210-xyz"
EVENT: dict[str, Any] = {"type": "Approval", "payload": {"approved": True, "viewDigest": "v2:" + "ab" * 32}}
CONTEXT: dict[str, Any] = {"executionId": EXECUTION, "parkedAtSequence": PARK, "principal": None}


def authenticator(**overrides: Any) -> SignedResumeAuthenticator:
    options: dict[str, Any] = {"gates": ["Approval", "Review"], "keys": {"alice": SECRET, "bob": BOB_SECRET},
                               "now": lambda: NOW, **overrides}
    return SignedResumeAuthenticator(**options)


def signed(event: dict = EVENT, *, actor: str = "alice", secret: str = SECRET, exp: int = EXP,
           execution_id: str = EXECUTION, parked_at_sequence: int = PARK) -> dict:
    return sign_resume(event, actor=actor, secret=secret, exp=exp, execution_id=execution_id,
                       parked_at_sequence=parked_at_sequence)


def reason(verdict: Verdict) -> str | None:
    assert verdict.status in ("granted", "rejected"), verdict
    return verdict.reason if verdict.status == "rejected" else "granted"
