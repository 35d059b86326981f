"""Approvals presented for an operation or an incarnation they were not signed for
(spec/signing.md section 10, beyond ADR 0117 D2). Only an authenticator that binds them must
reject these: one that follows ADR 0117 D2 only grants the plain resume's proof wherever its
park and fields match, and is not wrong by the ADR."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from loomcheck.fuzz.tampering import Triple, changed_json
from loomcheck.reference.approvals import sign_resume

__all__ = ["REBINDING_CATEGORIES", "rebindings"]

REBINDING_CATEGORIES = ("resume-proof-for-resume-as", "resume-as-proof-for-resume", "other-target-flow",
                        "other-transform", "re-created-execution")


def rebindings(event: dict, *, actor: str, secret: str, exp: int, execution_id: str, parked_at_sequence: int,
               resume_as: dict, other_flow: str) -> Iterator[Triple]:
    """(category, signed event, context) triples an authenticator that binds the operation and the
    incarnation must reject: the approval signed for one operation (a plain resume, or the resumeAs
    `resume_as` = {flowId, transformState} names) or incarnation, presented for another. `other_flow`
    is a target other than resume_as's. Contexts carry the park, the operation and the incarnation,
    no principal."""
    if other_flow == resume_as.get("flowId"):
        raise ValueError("other_flow must differ from the resumeAs's target")

    def sign(**binding: Any) -> dict:
        return sign_resume(event, actor=actor, secret=secret, exp=exp, execution_id=execution_id,
                           parked_at_sequence=parked_at_sequence, **binding)

    def context(operation: dict | None = None, incarnation: int = 1) -> dict:
        return {"executionId": execution_id, "parkedAtSequence": parked_at_sequence, "principal": None,
                "operation": operation or {"type": "resume"}, "incarnation": incarnation}

    def onto(flow: Any, transform: Any) -> dict:
        return {"type": "resumeAs", "flowId": flow, "transformState": transform}

    flow, transform = resume_as["flowId"], resume_as.get("transformState")
    plain, moved = sign(), sign(resume_as=resume_as)
    # The probe's case: what the approver saw was a resume; the resumeAs runs other code, on migrated input.
    for target, state in _distinct([(flow, transform), (flow, None), (other_flow, transform)]):
        yield "resume-proof-for-resume-as", copy.deepcopy(plain), context(onto(target, state))
    yield "resume-as-proof-for-resume", copy.deepcopy(moved), context()
    yield "other-target-flow", copy.deepcopy(moved), context(onto(other_flow, transform))
    for changed in _distinct([changed_json(transform), None, {"name": "wrap", "key": "other"}]):
        if changed != transform:
            yield "other-transform", copy.deepcopy(moved), context(onto(flow, changed))
    # The execution re-created under the id after erase is not the one whose park the approver saw.
    yield "re-created-execution", copy.deepcopy(plain), context(incarnation=2)
    yield "re-created-execution", sign(incarnation=2), context(incarnation=3)
    yield "re-created-execution", copy.deepcopy(moved), context(onto(flow, transform), 2)


def _distinct(items: list[Any]) -> list[Any]:
    """In order, each once (JSON values are not hashable)."""
    kept: list[Any] = []
    for item in items:
        if item not in kept:
            kept.append(item)
    return kept
