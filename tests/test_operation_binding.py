"""No approval is reused for another operation (spec/signing.md section 10, beyond ADR 0117 D2):
the probe that found it, a proof signed for resume(x, approve, P) accepted by resumeAs(x -> another
flow, with a state transform), and its twin, a proof that stayed valid after erase and re-creation
of the same id. The reference refuses both; a proof signed for exactly that resumeAs, or for the
re-created execution, is accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loomcheck.contract.script import Configure, Define, ResumeAs, Start
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
    from loomcheck.contract import signing as spec
    from loomcheck.reference.approvals import signing_input
    from loomcheck.reference.authenticator import SignedResumeAuthenticator

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
    from loomcheck.reference.authenticator import SignedResumeAuthenticator
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


def test_the_rebinding_corpus_is_refused_by_the_reference_and_granted_in_part_by_the_adr_alone() -> None:
    """fuzz/rebinding.py's section-10 triples: the reference rejects every one; ADR 0117 D2's fields alone
    (the same authenticator handed no operation) grant exactly the plain resume's proofs reused, which is
    what approvals.operation-bound reports apart."""
    from loomcheck.fuzz.rebinding import REBINDING_CATEGORIES, rebindings
    from loomcheck.reference.authenticator import SignedResumeAuthenticator

    verifier = SignedResumeAuthenticator(gates=[GATE], keys={ACTOR: SECRET}, now=lambda: EXP - 1)
    triples = list(rebindings({"type": GATE, "payload": {"approved": True}}, actor=ACTOR, secret=SECRET, exp=EXP,
                              execution_id="x", parked_at_sequence=2, resume_as={"flowId": "g", "transformState":
                                                                                  TRANSFORM}, other_flow="h"))
    assert {category for category, _, _ in triples} == set(REBINDING_CATEGORIES)
    assert all(verifier.verify(event, context).reason == "bad-signature" for _, event, context in triples)
    adr_alone = {(category, context["incarnation"]) for category, event, context in triples
                 if verifier.verify(event, {k: context[k] for k in ("executionId", "parkedAtSequence")}).status
                 == "granted"}
    assert adr_alone == {("resume-proof-for-resume-as", 1), ("re-created-execution", 2)}


# -- through the harness: the extension is reported apart, and an ADR-only kernel keeps its verdict --
ADR_ONLY = Path(__file__).with_name("adr_only_approvals.py")
JUDGED = ("approvals.signature-bound", "approvals.operation-bound", "approvals.granted-evidence",
          "typed.identity-before-shape", "refusal.append-nothing")


def _session(driver: Any) -> Any:
    from loomcheck.contract.session import Session, hello_of

    session = Session(driver, frozenset(hello_of(driver).features))
    for op in (Configure(CONFIG), Define("f", FLOW), Define("g", OTHER), Start("x", "f", {"amount": 120})):
        assert session.apply(op).outcome.ok
    return session


def _resume_as(session: Any, operation: Any) -> Any:
    """resumeAs x onto g with TRANSFORM, approved by a proof the harness signed for `operation`."""
    from loomcheck.contract import proofs
    park = session.parked_at_sequence("x")
    payload = {"approved": True, "viewDigest": session.read_state("x")["suspendedOn"]["viewDigest"]}
    proof = proofs.sign(session, proofs.Claim("x", park, ACTOR, EXP, GATE, payload, operation=operation), SECRET)
    return session.apply(ResumeAs("x", "g", GATE, payload, {"proof": proof, "transformState": TRANSFORM}))


@pytest.mark.parametrize("kernel", ["reference", "adr-only"])
def test_each_kernel_is_handed_the_bytes_it_verifies_and_only_the_extension_judges_the_reuse(kernel: str) -> None:
    from loomcheck.contract import proofs
    from loomcheck.run.loading import resolve_factory
    from loomcheck.properties.checks import check_step

    make = (lambda: ReferenceDriver(store="memory")) if kernel == "reference" else \
        resolve_factory(f"python:{ADR_ONLY}:make")
    for operation, reused in ((proofs.Operation("g", TRANSFORM), False), (proofs.RESUME, True)):
        session = _session(make())
        step = _resume_as(session, operation)
        violated = {v.invariant for v in check_step(step, session.trace, list(JUDGED))}
        if not reused:  # signed for exactly this resumeAs: both grant it, whatever bytes each verifies
            assert step.outcome.ok and not violated, (step.outcome, violated)
        elif kernel == "reference":
            assert step.outcome.reason == "unauthenticated" and not violated, (step.outcome, violated)
        else:  # ADR 0117 D2 grants the plain resume's proof: the extension's finding, and no ADR invariant's
            assert step.outcome.ok and violated == {"approvals.operation-bound"}, (step.outcome, violated)


def test_an_adr_only_kernel_disagrees_with_the_profile_without_failing_the_run(tmp_path: Path) -> None:
    from loomcheck.cli import main
    from loomcheck.reports.model import Report

    codes = {}
    for checks in ("advisory", "strict"):
        codes[checks] = main(["run", "--impl", f"python:{ADR_ONLY}:make", "--only", "approvals.operation-bound",
                              "--profile-checks", checks, "--report", str(tmp_path / checks)])
        report = Report.model_validate_json((tmp_path / checks / "report.json").read_text())
        (record,) = report.results
        assert record.status == "fail" and record.disagrees and record.profile == "operation-binding", record
        assert report.summary.profileDisagreements == 1 and report.summary.failed == 0
        assert "re-created-execution" in report.corpora[0].perCategory, report.corpora
    assert codes == {"advisory": 0, "strict": 1}


def test_a_kernel_that_signs_itself_is_handed_the_operation_in_the_claim() -> None:
    """Feature "signing": the claim carries what the approval is for, in the protocol's own message,
    so the kernel's format can bind it; the permuted reference's format binds it not (its choice)."""
    import permuted

    from loomcheck.contract import proofs
    from loomcheck.protocol.messages import Claim

    driver = permuted.make()
    claims: list[dict[str, Any]] = []
    sign = driver.sign
    driver.sign = lambda claim: claims.append(claim) or sign(claim)  # type: ignore[method-assign]
    session = _session(driver)
    assert proofs.signs_itself(session.features) and proofs.BINDING not in session.features
    assert _resume_as(session, proofs.Operation("g", TRANSFORM)).outcome.ok
    (claim,) = claims
    assert claim["operation"] == {"type": "resumeAs", "flowId": "g", "transformState": TRANSFORM}
    assert Claim.model_validate(claim).operation is not None
