"""The driver operation sign(claim) (feature "signing", ADR 0117 D2): an implementation that signs
approvals in its own proof format is handed its own proofs wherever the harness approves, its own
proof's bytes are tampered with, and the permuted reference, which signs its own way, passes the
approval invariants in process and over stdio, while a seeded mutant of its verifier is caught."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from loomcheck.cli import main
from loomcheck.fuzz.own_proofs import OWN_PROOF_CATEGORIES
from loomcheck.contract import proofs
from loomcheck.run.replay import run_operations
from loomcheck.contract.script import Configure, Define, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, hello_of
from loomcheck.contract import signing as spec
from loomcheck.corpora.tampered_approvals import run_tampering
from loomcheck.protocol.server import handle
from loomcheck.protocol.validation import ProtocolValidator
from loomcheck.reference.driver import ReferenceDriver

import permuted
from permuted import proof_mutants

TESTS = Path(__file__).parent
GATE, ACTOR, SECRET = "approve", "ann", "ann-approver-secret-0001"
CONFIG = {"authenticator": {"gates": [GATE], "keys": {ACTOR: SECRET}}}
FLOW = {"body": [{"op": "suspend", "on": GATE}, {"op": "complete", "output": "done"}]}
# The checks an approval touches: D2's binding and evidence, Round 2's park, ADR 0077 D3's order,
# and ADR 0104 D2's override, which the signature must cover.
APPROVAL_CHECKS = ["approvals.signature-bound", "approvals.granted-evidence", "approvals.park-located",
                   "typed.identity-before-shape", "legacy.override-authenticated"]


class Recording:
    """A driver passed through, remembering the options each resume was handed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.handed: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def resume(self, execution: str, event_type: str, payload: Any, options: Any = None) -> Any:
        self.handed.append(options)
        return self.inner.resume(execution, event_type, payload, options) if options else \
            self.inner.resume(execution, event_type, payload)


def _session(driver: Any) -> Session:
    return Session(driver, frozenset(hello_of(driver).features))


def _parked(session: Session) -> int:
    session.reset()
    for op in (Configure(CONFIG), Define("f", FLOW), Start("x", "f", None)):
        assert session.apply(op).outcome.ok
    park = session.parked_at_sequence("x")
    assert park is not None
    return park


def _claim(park: int, **changes: Any) -> proofs.Claim:
    fields = dict(execution="x", parked_at=park, actor=ACTOR, exp=session_now() + 60_000, event_type=GATE,
                  payload={"approved": True})
    return proofs.Claim(**{**fields, **changes})


def session_now() -> int:
    from loomcheck.spec.names import CLOCK_START_MS

    return CLOCK_START_MS


# -- who signs -------------------------------------------------------------------------------
def test_the_reference_leaves_signing_to_spec_signing_md_and_the_permuted_reference_signs_its_own() -> None:
    # The reference keeps the proof-wire-format path (spec/signing.md) exercised; the permuted one the other.
    assert "signing" not in hello_of(ReferenceDriver(store="memory")).features
    assert {"security", "signing"} <= set(hello_of(permuted.make()).features)


def test_a_kernel_that_signs_itself_is_handed_its_own_proof_and_others_the_harness_s() -> None:
    for driver, own in ((Recording(permuted.make()), True), (Recording(ReferenceDriver(store="memory")), False)):
        session = _session(driver)
        park = _parked(session)
        proof = proofs.sign(session, _claim(park), SECRET)
        step = session.apply(Resume("x", GATE, {"approved": True}, {"proof": proof}))
        assert step.outcome.ok, step.outcome
        handed = driver.handed[-1]["proof"]
        assert step.op.options == {"proof": proof}  # the script keeps the harness's notation
        assert (handed != proof) is own and (set(handed) == {"by", "until", "for", "at", "mac"}) is own


def test_a_regression_log_s_proof_is_signed_again_by_the_kernel_that_signs_itself() -> None:
    # A log's proof was signed elsewhere (no claim remembered): verified at the park, then re-signed.
    driver = Recording(permuted.make())
    session = _session(driver)
    park = _parked(session)
    proof = spec.sign(GATE, {"approved": True}, actor=ACTOR, secret=SECRET, exp=session_now() + 60_000,
                      execution="x", parked_at=park)
    operations = [Configure(CONFIG), Define("f", FLOW), Start("x", "f", None),
                  Resume("x", GATE, {"approved": True}, {"proof": proof})]
    result = run_operations(_session(driver), operations, ["approvals.signature-bound", "approvals.granted-evidence"])
    assert result.outcomes[-1] == "ok" and not result.violations, (result.outcomes, result.violations)
    assert "mac" in driver.handed[-1]["proof"]


def test_a_refusal_to_sign_is_data_and_anything_else_is_the_implementation_failing() -> None:
    class Signer:
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        def hello(self) -> dict[str, Any]:
            return {"name": "signer", "version": "0", "eventSchema": "1.20.0", "features": ["security", "signing"]}

        def sign(self, claim: dict[str, Any]) -> Any:
            return self.answer

    claim = _claim(2).to_json()
    assert _session(Signer({"refused": {"reason": "unknown-actor", "message": ""}})).sign(claim) is None
    assert _session(Signer({"proof": {"k": "v"}})).sign(claim) == {"k": "v"}
    for garbage in ({"proof": "not an object"}, {"refused": {}}, None, {"proof": {}, "extra": 1}):
        with pytest.raises(ImplementationFailed):
            _session(Signer(garbage)).sign(claim)


def test_the_permuted_signer_refuses_what_it_cannot_sign_as_data() -> None:
    driver = permuted.make()
    session = _session(driver)
    park = _parked(session)
    assert driver.sign(_claim(park, actor="mallory").to_json())["refused"]["reason"] == "unknown-actor"
    assert driver.sign(_claim(park, payload=float("nan")).to_json())["refused"]["reason"] == "unsignable"
    assert set(driver.sign(_claim(park).to_json())["proof"]) == {"by", "until", "for", "at", "mac"}


# -- the protocol message --------------------------------------------------------------------
def test_sign_over_the_protocol_is_a_result_for_a_proof_and_for_a_refusal() -> None:
    driver = permuted.make()
    features = frozenset(hello_of(driver).features)
    validator = ProtocolValidator()
    handle(driver, features, {"id": 1, "op": "configure", "config": CONFIG})
    signed = handle(driver, features, {"id": 2, "op": "sign", "claim": _claim(2).to_json()})
    refused = handle(driver, features, {"id": 3, "op": "sign", "claim": _claim(2, actor="mallory").to_json()})
    assert "mac" in signed["result"]["proof"] and refused["result"]["refused"]["reason"] == "unknown-actor"
    assert validator.response(signed, "sign") is None and validator.response(refused, "sign") is None
    assert validator.response({"id": 4, "result": {"proof": "x"}}, "sign") is not None
    undeclared = handle(driver, features - {"signing"}, {"id": 5, "op": "sign", "claim": _claim(2).to_json()})
    assert undeclared["error"]["kind"] == "unsupported"


# -- the tampering corpus --------------------------------------------------------------------
def test_the_tampering_corpus_alters_the_permuted_reference_s_own_proofs_and_it_refuses_each() -> None:
    result = run_tampering(_session(permuted.make()))
    assert not result.violations, [v.message for v in result.violations[:3]]
    assert set(OWN_PROOF_CATEGORIES) <= set(result.per_category), result.per_category
    assert {"other-actor", "other-execution", "later-park", "expired", "valid"} <= set(result.per_category)
    assert "signature-bitflip" not in result.per_category  # spec/signing.md's bytes: never its verifier's


@pytest.mark.parametrize("mutant", sorted(proof_mutants.CATCHES))
def test_a_verifier_that_accepts_its_own_proof_altered_is_caught_by_the_tampering_corpus(mutant: str) -> None:
    result = run_tampering(_session(getattr(proof_mutants, mutant)()), proof_mutants.CATCHES[mutant])
    caught = {v.invariant for v in result.violations if v.message.startswith("proof-")}
    assert set(proof_mutants.CATCHES[mutant]) <= caught, [v.message for v in result.violations[:3]]


# -- the whole path, as a user runs it ---------------------------------------------------------
def _run(impl: str, tmp_path: Path, *budget: str) -> dict[str, str]:
    import json

    code = main(["run", "--impl", impl, "--only", *APPROVAL_CHECKS, "--explore-depth", "0", *budget,
                 "--report", str(tmp_path)])
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["complete"] and not report["findings"], report["findings"]
    statuses = {r["id"]: r["status"] for r in report["results"]}
    assert code == 0 and set(statuses.values()) == {"pass"}, statuses
    return statuses


def test_the_permuted_reference_passes_the_approval_invariants_in_process(tmp_path: Path) -> None:
    _run("python:permuted:make", tmp_path)


def test_the_permuted_reference_passes_the_approval_invariants_over_stdio(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    command = shlex.join([sys.executable, "-m", "loomcheck", "serve", "--impl", "python:permuted:make"])
    # A small state-machine budget: every corpus still runs whole, each sign a round trip over the pipe.
    _run(f"stdio:{command}", tmp_path, "--profile", "peers-slow")


NODE = shutil.which("node")
NODE_KERNEL = TESTS.parent / "examples" / "node" / "kernel.mjs"
# What the JavaScript example declares of ADR 0117 (security and signing; no views, timers or schemas).
NODE_CHECKS = ["approvals.signature-bound", "approvals.granted-evidence", "approvals.park-located",
               "approvals.weak-secret", "approvals.strict-needs-authenticator"]


@pytest.mark.skipif(NODE is None, reason="node is not on PATH: the JavaScript example adapter cannot run")
def test_the_node_example_signs_its_own_proofs_and_passes_the_approval_invariants_it_declares(tmp_path: Path) -> None:
    import json

    impl = "stdio:" + shlex.join([str(NODE), str(NODE_KERNEL)])
    code = main(["run", "--impl", impl, "--only", *NODE_CHECKS, "--explore-depth", "0", "--profile", "peers-slow",
                 "--report", str(tmp_path)])
    report = json.loads((tmp_path / "report.json").read_text())
    assert {"security", "signing"} <= set(report["implementation"]["features"])
    statuses = {r["id"]: r["status"] for r in report["results"]}
    assert code == 0 and set(statuses.values()) == {"pass"} and not report["findings"], statuses
    tampering = next(c for c in report["corpora"] if c["name"] == "tampering")
    assert set(OWN_PROOF_CATEGORIES) <= set(tampering["perCategory"]), tampering["perCategory"]
