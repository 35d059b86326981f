"""What one operation reaches (run/reached.py), read from what the kernel DID: each scenario
drives the reference kernel through a hand-written script and checks the items reached; the
same script against a seeded mutant (tests/mutants/) that behaves otherwise must leave the item
unreached, so no check here passes on intention alone."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from coverage_scripts import CRASHING, GATE, GATES, WITH_HUMAN, WRONG_GATE, keys, mutant, per_step, reference, run
from loomcheck.contract.driver import Driver
from loomcheck.contract.script import Define, Load, Operation, Recover, RecoverAbandoned, Resume, ResumeAs, Start
from loomcheck.corpora.legacy_scenarios import HUMAN, NEW_PARK, PAIR, REPARKED, START, events
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.run.reached import scanner_keys, warned_keys


class YesMan(ReferenceDriver):
    """Accepts every resume and recovery and does nothing: no refusal, no append."""

    def resume(self, *args: Any, **kwargs: Any) -> Any:
        from loomcheck.contract.driver import Outcome
        return Outcome.accepted()

    recover = resume


def emitting(*emits: dict[str, Any], flow_level: bool = False) -> dict[str, Any]:
    """A flow whose step (or, flow_level, whose body) emits these, then parks."""
    if flow_level:
        return {"body": [*({"op": "emit", **e} for e in emits), {"op": "suspend", "on": "go1"}, {"op": "complete"}]}
    return {"body": [{"op": "step", "id": "s", "emits": list(emits)}, {"op": "suspend", "on": "go1"}, {"op": "complete"}]}


# -- refusals ---------------------------------------------------------------------------------
def test_a_refused_resume_reaches_its_reason_and_an_accepted_one_its_row() -> None:
    reached_ = keys(run(reference, WRONG_GATE))
    assert {"refusal:gate-mismatch", "recording-row:parked-at-gate"} <= reached_
    assert "refusal:kernel-namespace" not in reached_


def test_a_refused_resume_is_no_row() -> None:
    steps = per_step(reference, WRONG_GATE)
    assert steps[2] == {"refusal:gate-mismatch"} and steps[3] == {"recording-row:parked-at-gate"}


def test_a_kernel_that_never_refuses_a_wrong_gate_leaves_gate_mismatch_unreached() -> None:
    """Judged by what the kernel did: the script sent a wrong gate, the mutant accepted it."""
    reached_ = keys(run(mutant("any_gate"), WRONG_GATE))
    assert "refusal:gate-mismatch" not in reached_
    assert "recording-row:parked-at-gate" in reached_


def test_the_kernel_namespace_refusal_is_reached_only_when_the_kernel_refuses_it() -> None:
    script = [Define("f", GATE), Start("x", "f"), Resume("x", "EXECUTION_RESUMED", 1)]
    assert "refusal:kernel-namespace" in keys(run(reference, script))
    opened = keys(run(mutant("open_namespace"), script))
    assert "refusal:kernel-namespace" not in opened and "refusal:gate-mismatch" in opened


def test_an_unknown_reason_from_a_kernel_reaches_nothing() -> None:
    class Inventive(ReferenceDriver):
        def resume(self, *args: Any, **kwargs: Any) -> Any:
            from loomcheck.contract.driver import Outcome
            return Outcome.refused("ResumeRefusedError", "made-up-reason")

    coverage = run(lambda: Inventive(store="memory"), [Define("f", GATE), Start("x", "f"), Resume("x", "go1", 1)])
    assert not {k for k in keys(coverage) if k.startswith("refusal:")}


# -- the recording table (ADR 0104 D1) ------------------------------------------------------
def test_recovery_and_terminal_rows_and_refusals() -> None:
    script = [Define("f", CRASHING), Start("x", "f"), Recover("x"), Recover("x"), Resume("x", "go1", 1), Recover("x"),
              Define("g", GATE), ResumeAs("x", "g", "Reopen", None)]
    reached_ = keys(run(reference, script))
    # crash, recover (row), recover a parked one (not-suspended), answer, recover a finished one (terminal), re-open
    assert {"recording-row:recovery", "refusal:not-suspended", "recording-row:parked-at-gate", "refusal:terminal",
            "recording-row:terminal"} <= reached_
    assert "recording-row:crashed" not in reached_ and "recording-row:parked-in-doubt" not in reached_


def test_a_kernel_that_recovers_parked_executions_reaches_no_not_suspended() -> None:
    script = [Define("f", CRASHING), Start("x", "f"), Recover("x"), Recover("x")]
    assert "refusal:not-suspended" in keys(run(reference, script))
    steps = per_step(mutant("recovers_parked"), script)
    assert steps[2] == {"recording-row:recovery"}  # of a crashed execution
    assert steps[3] == set()  # accepted on a parked execution: no refusal, and no row of the table


def test_in_doubt_and_crashed_rows() -> None:
    in_doubt = {"body": [{"op": "step", "id": "n", "kind": "non-idempotent", "crash": {"at": "after-effect"}},
                         {"op": "suspend", "on": "go1"}, {"op": "complete"}]}
    verdict = {"stepId": "n", "resolution": "succeeded", "output": 1}
    script = [Define("f", in_doubt), Start("x", "f"), Recover("x"), Resume("x", "EffectInDoubtResolved", {"no": 1}),
              Resume("x", "EffectInDoubtResolved", verdict), Start("y", "f"), ResumeAs("y", "f", "Redeploy", None)]
    reached_ = keys(run(reference, script))
    assert {"refusal:not-a-verdict", "recording-row:parked-in-doubt", "recording-row:crashed"} <= reached_


# -- the emit guard (ADR 0104 D1) ------------------------------------------------------------
def emit_keys_of(make: Callable[[], Driver], program: dict[str, Any], then: list[Operation] = ()) -> set[str]:
    return keys(run(make, [Define("f", program), Start("x", "f"), *then]))


def test_an_invalid_meter_is_reached_from_the_failed_run_and_not_on_a_loose_kernel() -> None:
    program = emitting({"type": "RESOURCE_METERED", "payload": {"tokens": -1}})
    assert {"refusal:invalid-meter", "emit-rule:meter-validated"} <= emit_keys_of(reference, program)
    loose = emit_keys_of(mutant("loose_meter"), program)
    assert "refusal:invalid-meter" not in loose and "emit-rule:meter-validated" not in loose
    assert "emit-rule:allowed-type-appended" in loose  # the mutant appended it


@pytest.mark.parametrize(("emit", "flow_level", "expected"), [
    ({"type": "STEP_COMPLETED", "payload": {"stepId": "s"}}, False, {"refusal:kernel-type", "emit-rule:kernel-type-refused"}),
    ({"type": "QUOTA_EXCEEDED", "payload": {}}, False, {"refusal:invalid-quota", "emit-rule:quota-validated"}),
    ({"type": "SAFETY_BLOCKED", "payload": "no"}, False, {"refusal:invalid-emit", "emit-rule:audit-needs-object"}),
    ({"type": "DECISION_RECORDED", "payload": {"choice": 1}}, True, {"refusal:invalid-emit", "emit-rule:decision-needs-id"}),
    ({"type": "DECISION_RECORDED", "payload": {"decisionId": "__loom_x", "choice": 1}}, True,
     {"refusal:reserved-decision-id", "emit-rule:reserved-id-emit"}),
    ({"type": "DECISION_RECORDED", "payload": {"decisionId": "d", "choice": 1}}, False, {"emit-rule:effect-id-rewritten"}),
    ({"type": "DECISION_RECORDED", "payload": {"decisionId": "d", "choice": 1}}, True, {"emit-rule:flow-emit-keeps-id"}),
    ({"type": "EGRESS_DENIED", "payload": {"host": "h"}}, False, {"emit-rule:allowed-type-appended"}),
])
def test_emit_rules_reached(emit: dict[str, Any], flow_level: bool, expected: set[str]) -> None:
    reached_ = emit_keys_of(reference, emitting(emit, flow_level=flow_level))
    assert expected <= reached_, sorted(reached_)
    others = {k for k in reached_ if k.startswith("emit-rule:")} - expected - {"emit-rule:allowed-type-appended"}
    assert others == set(), f"attributed to other rules too: {sorted(others)}"


def test_a_payload_no_store_holds_never_reaches_the_guard_through_the_driver() -> None:
    """ADR 0104 D1's invalid-emit for a payload that is not plain JSON: a flow program must
    itself be storable JSON, so define_flow refuses the program first (invalid-program) and
    no run ever emits it. emit-rule:not-plain-json stays a gap unless a layer without the
    driver (the guard's own tests, the symbolic layer) credits it."""
    reached_ = emit_keys_of(reference, emitting({"type": "app.note", "payload": {"t": "\ud800"}}))
    assert "refusal:invalid-program" in reached_
    assert "emit-rule:not-plain-json" not in reached_ and "refusal:invalid-emit" not in reached_


def test_an_open_emit_guard_reaches_no_emit_refusal() -> None:
    program = emitting({"type": "STEP_COMPLETED", "payload": {"stepId": "s"}})
    reached_ = emit_keys_of(mutant("open_emit_guard"), program)
    assert not {k for k in reached_ if k in ("refusal:kernel-type", "emit-rule:kernel-type-refused")}


def test_an_unscoped_effect_decision_is_not_a_rewrite() -> None:
    program = emitting({"type": "DECISION_RECORDED", "payload": {"decisionId": "d", "choice": 1}})
    assert "emit-rule:effect-id-rewritten" not in emit_keys_of(mutant("unscoped_effect_decisions"), program)


def test_decide_with_a_reserved_id_and_conflicting_and_identical_decisions() -> None:
    decide = {"body": [{"op": "decide", "id": "__loom_y", "choice": 1}, {"op": "complete"}]}
    assert "emit-rule:reserved-id-decide" in emit_keys_of(reference, decide)
    assert "emit-rule:reserved-id-emit" not in emit_keys_of(reference, decide)
    same = {"type": "DECISION_RECORDED", "payload": {"decisionId": "k", "choice": 1}}
    conflict = emitting(same, {"type": "DECISION_RECORDED", "payload": {"decisionId": "k", "choice": 2}}, flow_level=True)
    assert {"refusal:decision-conflict", "emit-rule:decision-conflict-refused"} <= emit_keys_of(reference, conflict)
    replayed = emit_keys_of(reference, emitting(same, flow_level=True), [Resume("x", "go1", 1)])
    assert "emit-rule:identical-reemit-allowed" in replayed
    assert "emit-rule:identical-reemit-allowed" not in emit_keys_of(reference, emitting(same, flow_level=True))


# -- the stray scan (ADR 0104 D2) ----------------------------------------------------------------
def legacy(program: dict[str, Any], log: list[tuple[str, Any]], then: Operation,
           snapshot: dict[str, Any] | None = None) -> list[Operation]:
    first = int(snapshot["sequence"]) + 1 if snapshot else 1
    return [Define("f", program), Load("x", events(log, first), snapshot), then]


SNAPSHOT = {"sequence": 3, "status": "running", "flowId": "f", "suspendedOn": None, "steps": {},
            "variables": {"_input": None, "_resumePayloads": [{}], "_resumePayload": {}}}


@pytest.mark.parametrize(("script", "verdict"), [
    (legacy(GATES, [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}})], Resume("x", "go2", 2)), "passed"),
    (legacy(GATES, [START, *PAIR], Recover("x")), "at-risk"),
    (legacy(GATES, [START, *PAIR, ("EXECUTION_COMPLETED", {})], Resume("x", "go1", 1)), "harmless"),
    (legacy(GATES, [("STEP_STARTED", {"stepId": "x", "attempt": 1})], Recover("x"), SNAPSHOT), "unverifiable"),
    # a park right after a step the program knows is not human is a gate park (ADR 0104 D2 attribution)
    (legacy({"body": [{"op": "step", "id": "a"}, {"op": "suspend", "on": "go1"}, {"op": "complete"}]},
            [START, *PAIR, ("STEP_STARTED", {"stepId": "a", "attempt": 1}),
             ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}})], Resume("x", "go1", 1)), "passed"),
])
def test_scanner_verdicts(script: list[Operation], verdict: str) -> None:
    verdicts = {k for k in keys(run(reference, script)) if k.startswith("verdict:")}
    assert verdicts == {f"verdict:{verdict}"}


def test_a_re_open_is_judged_live() -> None:
    """ADR 0104 D2: a resumeAs onto a finished execution re-opens it, so its stray is at-risk."""
    script = legacy(GATES, [START, *PAIR, ("EXECUTION_FAILED", {"error": {}})], ResumeAs("x", "f", "Reopen", None))
    assert {k for k in keys(run(reference, script)) if k.startswith("verdict:")} == {"verdict:at-risk"}


def test_harmless_is_reached_where_a_kernel_meets_a_finished_log_not_where_it_accepts_one() -> None:
    """A kernel that accepts a resume of a finished execution reaches no refusal and no harmless
    (a correct kernel never scans a finished log, D4 refuses first): only what it did counts."""
    script = legacy(GATES, [START, *PAIR, ("EXECUTION_COMPLETED", {})], Resume("x", "go1", 1))
    assert not {k for k in keys(run(lambda: YesMan(store="memory"), script)) if k.startswith(("verdict:", "refusal:"))}


def test_recover_abandoned_scans_what_it_re_drives() -> None:
    script = [Define("f", GATES), Load("x", events([START, *PAIR])), RecoverAbandoned()]
    assert {k for k in keys(run(reference, script)) if k.startswith("verdict:")} == {"verdict:at-risk"}
    assert "recording-row:recovery" in keys(run(reference, script))


def test_a_loaded_log_is_not_a_run_of_this_kernel() -> None:
    """A log another kernel wrote may hold a failed emit or an effect's decision: no emit item."""
    written = [START, ("STEP_STARTED", {"stepId": "s", "attempt": 1}),
               ("DECISION_RECORDED", {"decisionId": "effect:s#1:d", "choice": 1}),
               ("EXECUTION_FAILED", {"error": {"type": "EmitRefusedError", "reason": "invalid-meter"}})]
    assert not {k for k in keys(run(reference, [Define("f", GATES), Load("x", events(written))]))
                if k.startswith(("emit-rule:", "refusal:"))}


def test_a_classifier_failure_is_kept_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    from loomcheck.run import reached as module

    def broken(step: Any, trace: Any) -> set[str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(module, "scanner_verdicts", broken)
    coverage = run(reference, WRONG_GATE)
    assert coverage.by == {} and len(coverage.errors) == len(WRONG_GATE) and "boom" in coverage.errors[0]


def test_a_load_alone_reaches_no_verdict() -> None:
    """The kernel scans on resume, resumeAs and recovery; a log only loaded was never read."""
    script = legacy(GATES, [START, *PAIR], Recover("x"))[:2]
    assert not {k for k in keys(run(reference, script)) if k.startswith("verdict:")}


@pytest.mark.parametrize(("log", "shape"), [
    ([START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1}), NEW_PARK], "stray-before-first-start"),
    (REPARKED, "reparked-after-answer"),
])
def test_ambiguity_shapes_are_reached_only_when_the_kernel_refuses(log: list[tuple[str, Any]], shape: str) -> None:
    script = legacy(WITH_HUMAN, log, Resume("x", HUMAN, "yes"))
    reached_ = keys(run(reference, script))
    assert {f"verdict:{shape}", "refusal:ambiguous-legacy-answers"} <= reached_
    lenient = keys(run(mutant("no_ambiguity_refusal"), script))
    assert f"verdict:{shape}" not in lenient and "refusal:ambiguous-legacy-answers" not in lenient


def test_hooks_for_layers_without_steps() -> None:
    log = events([START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1}), NEW_PARK])
    assert scanner_keys(log, None, WITH_HUMAN) == {"verdict:at-risk"}
    assert scanner_keys(log, None, WITH_HUMAN, refused_ambiguous=True) == {"verdict:at-risk",
                                                                           "verdict:stray-before-first-start"}
    assert warned_keys([{"verdict": "passed"}, {"verdict": "harmless"}, {"nothing": 1}]) == {"verdict:passed"}
