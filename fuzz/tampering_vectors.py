"""The published tampering vectors (spec/vectors/tampered-approvals.json), generated from the
one enumeration in fuzz/tampering.py; `python -m loomcheck.reports.schemas` rewrites them and a
test fails when the committed file is stale. The format: docs/authenticator-kit.md."""

from __future__ import annotations

import json
from typing import Any

from loomcheck.fuzz.tampering import (
    RULES, Signed, Tampering, event_type_variants, realised, shape_cases, tampering_cases,
)
from loomcheck.reference.approvals import sign_resume

NOW = 1_800_000_000_000  # ms since the epoch (2027-01-15)
ALICE, ALICE_SECRET = "alice", "alice-secret-0123456789"
BOB, BOB_SECRET = "bob", "bob-secret-9876543210-xyz"
# Approvals every tampering starts from: one echoing a view's digest (ADR 0117 D1) with nested,
# non-ASCII data, and one carrying an operator's override (ADR 0104 D2).
STARTS = (
    ("an approval echoing its gate's viewDigest",
     {"type": "Approval", "payload": {"approved": True, "comment": "ship it, señor",
                                      "items": [{"sku": "a-1", "qty": 2}, 2.5], "viewDigest": "v2:" + "3f" * 32}}),
    ("an approval carrying an operator's override",
     {"type": "Review", "payload": {"approved": False}, "discardLegacyAnswers": {"stepId": "review", "count": 2}}),
)
DESCRIPTION = (
    "Tampering vectors for a resume authenticator (ADR 0117 D2; ADR 0104 D2 for the override), generated "
    "from fuzz/tampering.py. Each group is one validly signed approval (spec/signing.md), `signed`, and the "
    "authenticator to verify it with: it knows `keys`, lists `gates` and judges time by `now`. `granted` "
    "is the untampered event, which such an authenticator grants to `signed.actor` at `context`. Each "
    "entry of `tampered` must be rejected: its `event` verified with its `context` (null: no context) is "
    "rejected, with `reason` in spec/signing.md's names. An implementation whose proofs are not "
    "spec/signing.md's rebuilds `event`: sign the group's event with `signed`'s fields, `sign` replacing "
    "some, then apply `edits` in order (docs/authenticator-kit.md). `categories`: the rule each category's "
    "tamperings break.")


def start_of(event: dict[str, Any]) -> Signed:
    return Signed(event, ALICE, ALICE_SECRET, NOW + 5 * 60_000, "exec-approvals-1", 7, (BOB, BOB_SECRET), NOW)


def cases_of(start: Signed) -> list[Tampering]:
    return [*tampering_cases(start), *shape_cases(start)]


def document() -> dict[str, Any]:
    groups = []
    for description, event in STARTS:
        start = start_of(event)
        groups.append({
            "description": description,
            "authenticator": {"gates": [event["type"], *event_type_variants(event["type"])],
                              "keys": {ALICE: ALICE_SECRET, BOB: BOB_SECRET}, "now": NOW},
            "signed": {"event": event, "actor": start.actor, "secret": start.secret, "exp": start.exp,
                       "executionId": start.execution_id, "parkedAtSequence": start.parked_at_sequence},
            "context": start.context(),
            "granted": realised(Tampering("valid", ""), start, sign_resume),
            "tampered": [{**case.to_json(), "event": realised(case, start)} for case in cases_of(start)],
        })
    return {"description": DESCRIPTION, "spec": "spec/signing.md", "categories": RULES, "groups": groups}


def text() -> str:
    """The document, its vectors one per line so a reader can scan them."""
    doc = document()
    vectors: dict[str, Any] = {}
    for group in doc["groups"]:
        for index, vector in enumerate(group["tampered"]):
            marker = f"@@vector-{len(vectors)}@@"
            vectors[marker] = vector
            group["tampered"][index] = marker
    written = json.dumps(doc, indent=2)
    for marker, vector in vectors.items():
        written = written.replace(json.dumps(marker), json.dumps(vector))
    return written + "\n"
