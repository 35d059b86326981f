"""ADR 0104 D2 and amendment R1a on the reference kernel's runtime: warnings, the
refusal, the override, retention and the scan cache; and the legacy-logs corpus on
mutants. The scanner itself: test_stray_scanner.py. spec/legacy-logs.md is the text
these tests read."""

from __future__ import annotations

from typing import Any

from loomcheck.corpora.legacy_scenarios import PAIR, START
from loomcheck.reference.approvals import sign_resume
from loomcheck.reference.driver import ReferenceDriver


# ----------------------------------------------------------------- the runtime

PROGRAM = {"body": [{"op": "suspend", "on": "go1"}, {"op": "step", "id": "h", "kind": "human"},
                    {"op": "suspend", "on": "go2"}, {"op": "observe"}, {"op": "complete"}]}
SECRET = "s" * 32


def driver_with(log: list[tuple[str, Any]], secure: bool = False) -> ReferenceDriver:
    driver = ReferenceDriver(store="memory")
    assert driver.define_flow("f", PROGRAM).ok
    assert driver.load("x", [{"type": t, "payload": p} for t, p in log], None).ok
    if secure:
        assert driver.configure({"authenticator": {"gates": ["HumanInput"],
                                                   "keys": {"op": SECRET}}}).ok
    return driver


# A pre-0104 recovery pair (go1 passed with its {}), then the new kernel parked at the human step.
AMBIGUOUS = [START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1}),
             ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput", "stepId": "h"}})]


def signed_options(driver: ReferenceDriver, payload: Any, discard: Any, gate: str = "HumanInput") -> dict[str, Any]:
    event = {"type": gate, "payload": payload, "discardLegacyAnswers": discard}
    signed = sign_resume(event, actor="op", secret=SECRET, exp=driver.clock.now() + 60_000,
                         execution_id="x", parked_at_sequence=driver.parked_at_sequence("x"))
    return {"proof": signed["proof"], "discardLegacyAnswers": discard}


def test_ambiguity_refuses_resume_and_recovery_appending_nothing() -> None:
    driver = driver_with(AMBIGUOUS)
    before = driver.read_log("x")
    refused = driver.resume("x", "HumanInput", "yes")
    assert (refused.ok, refused.reason) == (False, "ambiguous-legacy-answers")
    assert driver.read_log("x") == before
    assert [w["verdict"] for w in driver.warnings()] == ["at-risk"]
    crashed = driver_with(AMBIGUOUS[:-1])  # the same log, crashed right after the step started
    assert crashed.recover("x").reason == "ambiguous-legacy-answers"
    assert crashed.runtime.recover_abandoned() == []


def test_the_override_needs_an_authenticator_that_verified_it() -> None:
    discard = {"stepId": "h", "count": 0}
    plain = driver_with(AMBIGUOUS)
    assert plain.resume("x", "HumanInput", "yes", {"discardLegacyAnswers": discard}).reason == "discard-unverified"
    secure = driver_with(AMBIGUOUS, secure=True)
    unsigned = secure.resume("x", "HumanInput", "yes", {"discardLegacyAnswers": discard})
    assert unsigned.reason == "unauthenticated"
    # Signed without the override, then the override attached: the signature does not cover it.
    options = signed_options(secure, "yes", None)
    assert secure.resume("x", "HumanInput", "yes", {**options, "discardLegacyAnswers": discard}).reason == \
        "unauthenticated"
    other = signed_options(secure, "yes", {"stepId": "k", "count": 0})
    assert secure.resume("x", "HumanInput", "yes", other).reason == "discard-without-ambiguity"
    for bad in ({"stepId": "h"}, {"stepId": "", "count": 0}, {"stepId": "h", "count": -1}, True, "h"):
        assert plain.resume("x", "HumanInput", "yes", {"discardLegacyAnswers": bad}).reason == "invalid-discard"
        assert secure.resume("x", "HumanInput", "yes", {"discardLegacyAnswers": bad}).ok is False
    assert len(secure.read_log("x")) == len(AMBIGUOUS)


def test_the_override_is_recorded_and_applied_live_and_on_replay() -> None:
    """D2: count 0 (the known false positive): the step's next entry is its answer."""
    driver = driver_with(AMBIGUOUS, secure=True)
    assert driver.resume("x", "HumanInput", "yes", signed_options(driver, "yes", {"stepId": "h", "count": 0})).ok
    log = driver.read_log("x")
    decision = next(e["payload"] for e in log if e["type"] == "DECISION_RECORDED")
    assert decision == {"decisionId": "__loom_discard__:h", "choice": 0, "source": "operator",
                        "rationale": {"approval": {"actor": "op", "verifiedBy": decision["rationale"]["approval"]
                                                   ["verifiedBy"]}}}
    assert driver.read_state("x")["steps"]["h"]["output"] == "yes"
    driver.restart()
    assert driver.resume("x", "go2", "g2").ok  # a re-run past the step takes the same entries
    observed = [e["payload"] for e in driver.read_log("x") if e["type"] == "loomcheck.observed"]
    assert [(o["on"], o["value"]) for o in observed] == [("go1", {}), ("HumanInput", "yes"), ("go2", "g2")]


def test_a_count_discards_entries_before_the_answer() -> None:
    """D2: at the step, ctx.run discards `count` entries before taking its answer."""
    reparked = [START, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}}), ("go1", "g1"),
                ("EXECUTION_RESUMED", "g1"), ("STEP_STARTED", {"stepId": "h", "attempt": 1}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput"}}), ("HumanInput", "old"),
                ("EXECUTION_RESUMED", "old"), ("STEP_STARTED", {"stepId": "h", "attempt": 1}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput"}})]
    driver = driver_with(reparked, secure=True)
    assert driver.resume("x", "HumanInput", "new", signed_options(driver, "new", None)).reason == \
        "ambiguous-legacy-answers"
    assert driver.resume("x", "HumanInput", "new", signed_options(driver, "new", {"stepId": "h", "count": 1})).ok
    assert driver.read_state("x")["steps"]["h"]["output"] == "new"


def test_warnings_once_per_execution_and_verdict() -> None:
    log = [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}})]
    driver = driver_with(log)
    assert driver.resume("x", "go1", 1).ok
    assert [w["verdict"] for w in driver.warnings()] == ["passed"]
    driver.restart()  # a new process has not said it yet
    assert [w["verdict"] for w in driver.warnings()] == ["passed"]


def test_retention_leaves_an_unverifiable_warning() -> None:
    """D2: the prefix retained away, the snapshot holds a {} the tail does not explain."""
    driver = driver_with([START, *PAIR, ("STEP_STARTED", {"stepId": "a2"})])
    assert driver.truncate_prefix("x", 3).ok
    assert driver.read_log("x")[0]["seq"] == 4
    assert driver.read_state("x")["variables"]["_resumePayloads"] == [{}]
    assert driver.recover("x").ok
    assert [w["verdict"] for w in driver.warnings()] == ["unverifiable"]


def test_the_warm_runtime_sees_strays_written_after_a_clean_scan() -> None:
    """R1a: it does NOT assume a clean log stays clean; a fresh process decides the same."""
    program = {"body": [{"op": "suspend", "on": "go1"}, {"op": "suspend", "on": "go2"},
                        {"op": "step", "id": "h", "kind": "human"}, {"op": "complete"}]}
    driver = ReferenceDriver(store="memory")
    assert driver.define_flow("f", program).ok and driver.start("x", "f", None).ok
    assert driver.resume("x", "go1", 1).ok            # a clean scan, kept
    assert driver.runtime.scans.entries
    old_park = {"type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "HumanInput"}}}
    started = {"type": "STEP_STARTED", "payload": {"stepId": "h", "attempt": 1}}
    # An old node answers go2; its human step parks, is answered, re-runs and parks again.
    assert driver.append_events("x", [{"type": "go2", "payload": 2}, {"type": "EXECUTION_RESUMED", "payload": 2},
                                      started, old_park, {"type": "HumanInput", "payload": "a"},
                                      {"type": "EXECUTION_RESUMED", "payload": "a"}, started, old_park]).ok
    warm = driver.resume("x", "HumanInput", "b")
    assert warm.reason == "ambiguous-legacy-answers"
    assert not driver.runtime.scans.entries           # a refusal drops it
    driver.restart()
    assert driver.resume("x", "HumanInput", "b") == warm


# ----------------------------------------------------------------- the scan cache

def _warm(program: dict[str, Any]) -> ReferenceDriver:
    driver = ReferenceDriver(store="memory")
    assert driver.define_flow("f", program).ok and driver.start("x", "f", None).ok
    assert driver.resume("x", "go1", {}).ok and "x" in driver.runtime.scans.entries  # kept after a clean scan
    return driver


WARM = {"body": [{"op": "suspend", "on": "go1"}, {"op": "suspend", "on": "go2"},
                 {"op": "step", "id": "h", "kind": "human"}, {"op": "suspend", "on": "go3"}, {"op": "complete"}]}


def _rescanned(driver: ReferenceDriver, operation: Any) -> None:
    """The cache entry is not the old object afterwards: the operation scanned the whole log."""
    before = driver.runtime.scans.entries.get("x")
    operation()
    after = driver.runtime.scans.entries.get("x")
    assert before is not None and (after is None or after.scanner is not before.scanner)


def test_each_invalidation_forces_a_full_scan() -> None:
    """R1a: anything flagged, a refusal, an override, a different definition object, a gap,
    a log that no longer reaches the scanned sequence: the whole log is scanned again."""
    driver = _warm(WARM)
    _rescanned(driver, lambda: driver.resume("x", "go1", "wrong gate"))                 # a refusal
    driver = _warm(WARM)
    _rescanned(driver, lambda: driver.resume("x", "go2", 2, {"discardLegacyAnswers": {"stepId": "h", "count": 0}}))
    driver = _warm(WARM)
    assert driver.define_flow("f", WARM).ok                                              # a new definition object
    _rescanned(driver, lambda: driver.resume_as("x", "f", "go2", 2))
    driver = _warm(WARM)
    driver.append_events("x", [{"type": "EXECUTION_RECOVERED", "payload": {}}])
    assert driver.truncate_prefix("x", driver.read_log("x")[-1]["seq"]).ok              # retained past it: a gap
    _rescanned(driver, lambda: driver.resume("x", "go2", 2))
    driver = _warm(WARM)
    _rescanned(driver, lambda: driver.recover("x"))            # a recovery refused (it is parked) drops it too
    driver = _warm(WARM)
    driver.erase("x")
    driver.append_events("x", [{"type": "EXECUTION_STARTED", "payload": {"flowId": "f", "input": None}}])
    _rescanned(driver, lambda: driver.recover("x"))                                      # shorter than scanned
    driver = _warm(WARM)
    driver.append_events("x", [{"type": "go2", "payload": 2}, {"type": "EXECUTION_RESUMED", "payload": 2},
                               {"type": "EXECUTION_RECOVERED", "payload": {}},
                               {"type": "EXECUTION_RESUMED", "payload": {}}])  # an old node's answer, crash, pair
    assert driver.recover("x").ok                                                        # flagged: at-risk
    assert [w["verdict"] for w in driver.warnings()] == ["at-risk"] and "x" not in driver.runtime.scans.entries


def test_a_clean_warm_scan_feeds_only_the_new_events() -> None:
    """R1a: with nothing invalidating it, the kept scanner is the one fed, from its sequence on."""
    driver = _warm(WARM)
    kept = driver.runtime.scans.entries["x"]
    consumed = kept.scanner.consumed
    assert driver.resume("x", "go2", 2).ok
    again = driver.runtime.scans.entries["x"]
    assert again.scanner is kept.scanner and again.seq > consumed


# ----------------------------------------------- "a human park proves nothing", on its own

LEGACY_IDS = ("legacy.replayed-as-written", "legacy.classified", "legacy.human-park-proves-nothing",
              "legacy.park-attribution", "legacy.ambiguous-refused", "legacy.reopen-judged-live")


def _legacy_corpus(mutant: str, features: frozenset[str], with_new_shape: bool) -> set[str]:
    """The invariants the legacy-logs corpus finds violated on a mutant, with or without
    the hand-written case of a stray after the human step's first start."""
    import importlib

    import loomcheck.corpora.legacy_logs as corpus
    from loomcheck.contract.session import Session

    cases = corpus.CASES
    if not with_new_shape:
        corpus.CASES = tuple(c for c in cases if c.log is not corpus.STRAY_AFTER_START)
    try:
        driver = importlib.import_module(f"mutants.{mutant}").make()
        result = corpus.run_legacy_logs(Session(driver, features), LEGACY_IDS)
    finally:
        corpus.CASES = cases
        driver.close()
    return {v.invariant for v in result.violations}


def test_only_the_stray_after_a_first_start_catches_a_human_park_spending_unflagged_strays() -> None:
    """ADR 0104 D2: a human park proves nothing. In the ambiguous shapes the stray refuses the
    operation anyway, so a scanner that lets a human park spend only the strays that made no
    step ambiguous passes every other case; this shape, accepted and at-risk, is where it shows."""
    from loomcheck.reference.driver import FEATURES

    everything = frozenset(FEATURES)
    assert _legacy_corpus("unflagged_human_proof", everything, with_new_shape=False) == set()
    assert _legacy_corpus("unflagged_human_proof", everything, with_new_shape=True) == \
        {"legacy.human-park-proves-nothing"}
    assert _legacy_corpus("unflagged_human_proof", everything - {"parallel"}, with_new_shape=True) == \
        {"legacy.human-park-proves-nothing"}


def test_a_scanner_blind_after_a_first_start_is_caught_without_parallel_branches() -> None:
    """Gated per case, the fleet corpus's sequential logs run on a kernel without "parallel"
    (gated whole, none did, and the only stray after a first start was a parallel one)."""
    from loomcheck.reference.driver import FEATURES

    sequential = frozenset(FEATURES) - {"parallel"}
    assert "legacy.classified" in _legacy_corpus("blind_after_first_start", sequential, with_new_shape=False)
    assert "legacy.human-park-proves-nothing" in _legacy_corpus("blind_after_first_start", sequential,
                                                                with_new_shape=True)
    small = frozenset({"load-log", "legacy-scan", "human-steps"})  # no recovery, no resumeAs either
    assert "legacy.human-park-proves-nothing" in _legacy_corpus("blind_after_first_start", small, with_new_shape=True)
