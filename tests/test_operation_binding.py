"""No approval is reused for another operation (spec/signing.md section 10, beyond ADR 0117 D2):
the probe that found it, a proof signed for resume(x, approve, P) accepted by resumeAs(x -> another
flow, with a state transform), and its twin, a proof that stayed valid after erase and re-creation
of the same id. The reference refuses both; a proof signed for exactly that resumeAs, or for the
re-created execution, is accepted."""

from __future__ import annotations

from typing import Any

import pytest

from loomcheck.reference.approvals import sign_resume
from loomcheck.reference.driver import ReferenceDriver

GATE, ACTOR, SECRET = "approve", "ann", "ann-approver-secret-0001"
CONFIG = {"authenticator": {"gates": [GATE], "keys": {ACTOR: SECRET}}}
FLOW = {"body": [{"op": "suspend", "on": GATE, "view": {"pay": 120, "to": "acct-7"}}, {"op": "input"},
                 {"op": "complete", "output": "paid"}]}
OTHER = {"body": [{"op": "input"}, {"op": "complete", "output": "paid elsewhere"}]}
TRANSFORM = {"name": "wrap", "key": "smuggled"}  # the input the other flow runs with: never shown to the approver
EXP = 4_102_444_800_000


def _parked(driver: ReferenceDriver) -> tuple[int, dict[str, Any]]:
    assert driver.configure(CONFIG).ok
    assert driver.define_flow("f", FLOW).ok and driver.define_flow("g", OTHER).ok
    assert driver.start("x", "f", {"amount": 120}).ok
    state = driver.read_state("x")
    park = driver.parked_at_sequence("x")
    assert state["status"] == "suspended" and park is not None
    return park, {"approved": True, "viewDigest": state["suspendedOn"]["viewDigest"]}


def _resume_proof(park: int, payload: dict[str, Any]) -> dict[str, Any]:
    """What the approver signed: a plain resume of x at its park (ADR 0117 D2's fields only)."""
    return sign_resume({"type": GATE, "payload": payload}, actor=ACTOR, secret=SECRET, exp=EXP, execution_id="x",
                       parked_at_sequence=park)["proof"]


def test_a_proof_signed_for_resume_does_not_authorise_resume_as_onto_another_flow() -> None:
    driver = ReferenceDriver(store="memory")
    park, payload = _parked(driver)
    before = driver.read_log("x")
    outcome = driver.resume_as("x", "g", GATE, payload, {"proof": _resume_proof(park, payload),
                                                          "transformState": TRANSFORM})
    assert not outcome.ok and outcome.reason == "unauthenticated", outcome
    assert driver.read_log("x") == before  # no APPROVAL_GRANTED, no migration: nothing appended


def test_a_proof_signed_before_erase_does_not_authorise_the_re_created_execution() -> None:
    driver = ReferenceDriver(store="memory")
    park, payload = _parked(driver)
    proof = _resume_proof(park, payload)
    driver.erase("x")
    assert driver.start("x", "f", {"amount": 120}).ok  # the same id, flow and input: the same park, seq and digest
    assert driver.parked_at_sequence("x") == park and driver.read_state("x")["suspendedOn"]["viewDigest"] == \
        payload["viewDigest"]
    before = driver.read_log("x")
    outcome = driver.resume("x", GATE, payload, {"proof": proof})
    assert not outcome.ok and outcome.reason == "unauthenticated", outcome
    assert driver.read_log("x") == before


# -- what a proof for exactly that operation is granted -------------------------------------
def test_a_proof_signed_for_exactly_that_resume_as_is_granted_and_no_other() -> None:
    driver = ReferenceDriver(store="memory")
    park, payload = _parked(driver)
    move = {"flowId": "g", "transformState": TRANSFORM}

    def proof(**binding: Any) -> dict[str, Any]:
        return sign_resume({"type": GATE, "payload": payload}, actor=ACTOR, secret=SECRET, exp=EXP, execution_id="x",
                           parked_at_sequence=park, **binding)["proof"]

    refused = [driver.resume_as("x", "g", GATE, payload, {"proof": proof(resume_as={**move, "transformState": None}),
                                                           "transformState": TRANSFORM}),
               driver.resume_as("x", "f", GATE, payload, {"proof": proof(resume_as=move), "transformState": TRANSFORM}),
               driver.resume("x", GATE, payload, {"proof": proof(resume_as=move)})]
    assert [o.reason for o in refused] == ["unauthenticated"] * 3
    assert driver.resume_as("x", "g", GATE, payload, {"proof": proof(resume_as=move), "transformState": TRANSFORM}).ok
    kinds = [e["type"] for e in driver.read_log("x")]
    assert kinds[kinds.index("EXECUTION_MIGRATED"):][:2] == ["EXECUTION_MIGRATED", "APPROVAL_GRANTED"]


def test_the_re_created_execution_is_approved_by_a_proof_for_its_own_incarnation() -> None:
    driver = ReferenceDriver(store="memory")
    park, payload = _parked(driver)
    driver.erase("x")
    assert driver.start("x", "f", {"amount": 120}).ok
    proof = sign_resume({"type": GATE, "payload": payload}, actor=ACTOR, secret=SECRET, exp=EXP, execution_id="x",
                        parked_at_sequence=park, incarnation=driver.runtime.incarnation("x"))["proof"]
    assert driver.runtime.incarnation("x") == 2
    assert driver.resume("x", GATE, payload, {"proof": proof}).ok


# -- the published vectors of section 10, and ADR 0117 D2's SPI ------------------------------
def _bound_vectors() -> list[dict[str, Any]]:
    from loomcheck.spec.files import SPEC_ROOT, read_json

    return read_json(SPEC_ROOT / "vectors" / "signatures.json")["bound"]


def _context(vector: dict[str, Any], **changes: Any) -> dict[str, Any]:
    move = vector.get("resumeAs")
    operation = {"type": "resumeAs", **move} if move else {"type": "resume"}
    return {"executionId": vector["executionId"], "parkedAtSequence": vector["parkedAtSequence"],
            "operation": operation, "incarnation": vector.get("incarnation", 1), **changes}


@pytest.mark.parametrize("vector", _bound_vectors(), ids=lambda v: v["description"][:40])
def test_bound_vector(vector: dict[str, Any]) -> None:
    """Both readings of spec/signing.md section 10 reproduce the text and the signature (checked with
    Node.js when written), and the verifier grants the event only for that operation and incarnation."""
    from loomcheck.properties import signing as spec
    from loomcheck.reference.approvals import SignedResumeAuthenticator, signing_input

    park = {"actor": vector["actor"], "exp": vector["exp"], "execution_id": vector["executionId"],
            "parked_at_sequence": vector["parkedAtSequence"]}
    binding = {"resume_as": vector.get("resumeAs"), "incarnation": vector.get("incarnation", 1)}
    assert signing_input(vector["event"], **park, **binding).decode("utf-8") == vector["signingInput"]
    move = vector.get("resumeAs") or {}
    bound = spec.binding(move.get("flowId"), move.get("transformState"), vector.get("incarnation", 1))
    assert spec.message(vector["event"]["type"], vector["event"]["payload"], None, vector["actor"], vector["exp"],
                        vector["executionId"], vector["parkedAtSequence"], bound).decode() == vector["signingInput"]
    event = sign_resume(vector["event"], secret=vector["secret"], **park, **binding)
    assert event["proof"]["signature"] == vector["signature"]
    verifier = SignedResumeAuthenticator(gates=[vector["event"]["type"]], keys={vector["actor"]: vector["secret"]},
                                         now=lambda: vector["exp"] - 1)
    assert verifier.verify(event, _context(vector)).status == "granted"
    plain = {"executionId": vector["executionId"], "parkedAtSequence": vector["parkedAtSequence"]}
    for other in (plain, _context(vector, incarnation=vector.get("incarnation", 1) + 1),
                  _context(vector, operation={"type": "resumeAs", "flowId": "elsewhere"})):
        assert verifier.verify(event, other).reason == "bad-signature", other


def test_a_caller_of_the_adr_s_spi_is_a_plain_resume_and_a_malformed_operation_fails_closed() -> None:
    """ADR 0117 D2's context carries no operation: the section-2 vectors verify as they always did,
    with or without an explicit plain resume; a context the runtime could not have meant rejects."""
    from loomcheck.reference.approvals import SignedResumeAuthenticator
    from loomcheck.spec.files import SPEC_ROOT, read_json

    vector = read_json(SPEC_ROOT / "vectors" / "signatures.json")["vectors"][0]
    event = sign_resume(vector["event"], actor=vector["actor"], secret=vector["secret"], exp=vector["exp"],
                        execution_id=vector["executionId"], parked_at_sequence=vector["parkedAtSequence"])
    verifier = SignedResumeAuthenticator(gates=[vector["event"]["type"]], keys={vector["actor"]: vector["secret"]},
                                         now=lambda: vector["exp"] - 1)
    park = {"executionId": vector["executionId"], "parkedAtSequence": vector["parkedAtSequence"]}
    for context in (park, {**park, "operation": None, "incarnation": None},
                    {**park, "operation": {"type": "resume"}, "incarnation": 1}):
        assert verifier.verify(event, context).status == "granted", context
    for operation, incarnation in (({"type": "resumeAs"}, 1), ({"type": "migrate"}, 1), ("resume", 1),
                                   ({"type": "resumeAs", "flowId": "g", "extra": 1}, 1), (None, 0), (None, True)):
        verdict = verifier.verify(event, {**park, "operation": operation, "incarnation": incarnation})
        assert verdict.reason == "no-park-context", (operation, incarnation)
