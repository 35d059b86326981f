"""The bounded exhaustive explorer (explore/): it covers the reference's reachable
states, finds seeded mutants with short histories that replay, says "unknown"
when its budget runs out, and names a kernel whose replays disagree."""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import pytest

from loomcheck.explore.alphabet import scenarios
from loomcheck.explore.explorer import explore
from loomcheck.run.replay import run_operations
from loomcheck.run.runner import Run
from loomcheck.contract.session import Session, hello_of
from loomcheck.machine.state_machine import Budget
from loomcheck.properties.checks import all_predicates
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.catalogue import load_catalogue

DEPTH = 8
SMALL = Budget(max_examples=5, steps=5, derandomize=True)  # the state machine is not what these tests are about


def small_run(tmp_path: Path, only: str, **options: float) -> Run:
    run = Run("reference:memory", load_catalogue(), only=[only], report_dir=tmp_path, **options)  # type: ignore[arg-type]
    run.budget = SMALL
    return run


def session_of(driver: object) -> Session:
    return Session(driver, frozenset(hello_of(driver).features))  # type: ignore[arg-type]


def explored_ids(features: frozenset[str]) -> list[str]:
    known = all_predicates()
    return [inv.id for inv in load_catalogue().invariants
            if "explorer" in inv.checks and inv.id in known and set(inv.requires) <= features]


def test_the_reference_passes_every_scenario_and_most_are_exhausted() -> None:
    session = session_of(ReferenceDriver(store="memory"))
    found = scenarios(session.features)
    assert {s.name for s in found} >= {"two-gates", "in-doubt", "human-step", "timed-gate", "migration", "emit-guard"}
    for scenario in found:
        result = explore(session, scenario, explored_ids(session.features), DEPTH, time.monotonic() + 120)
        assert not result.failures and not result.errors, (scenario.name, result.failures, result.errors)
        assert result.status in ("exhausted", "bounded"), (scenario.name, result.status)
        assert result.distinct > 2 and result.transitions >= result.distinct - 1
        # A fixpoint: no history of any length reaches a state these did not (the clock and
        # repeated migrations grow without end, so those scenarios are only bounded).
        assert result.status == ("bounded" if scenario.grows else "exhausted"), (scenario.name, result.status)


# Mutant -> (scenario, invariant it must break). Each is found from its scenario alone,
# by the shortest history (breadth first), which replays on the mutant and not on the reference.
CAUGHT = {
    "any_gate": ("two-gates", "resume.gate-mismatch"),
    "recovery_resumes": ("two-gates", "recovery.records-no-answer"),
    "reversed_answers": ("two-gates", "gate.i-receives-entry-i"),
    "recovers_parked": ("two-gates", "recovery.skips-parked"),
    "early_answer": ("two-gates", "resume.not-suspended"),
    "loose_meter": ("emit-guard", "emit.meters-validated"),
    "loose_quota": ("emit-guard", "emit.quota-reason-validated"),
    "loose_audit_records": ("emit-guard", "emit.audit-records-validated"),
    "closed_audit_list": ("emit-guard", "emit.audit-records-validated"),
    "reserved_decision_ids": ("emit-guard", "emit.reserved-decision-ids"),
    "unscoped_effect_decisions": ("emit-guard", "emit.effect-decisions-scoped"),
    "overwritten_decisions": ("emit-guard", "emit.decisions-never-overwritten"),
    "open_emit_guard": ("emit-guard", "emit.kernel-types-refused"),
    "verdict_as_entry": ("in-doubt", "indoubt.verdict-is-a-decision"),
}


@pytest.mark.parametrize("mutant", sorted(CAUGHT))
def test_the_explorer_finds_a_seeded_mutant_with_a_short_replayable_history(mutant: str) -> None:
    scenario_name, invariant = CAUGHT[mutant]
    driver = importlib.import_module(f"mutants.{mutant}").make()
    session = session_of(driver)
    (scenario,) = [s for s in scenarios(session.features) if s.name == scenario_name]
    result = explore(session, scenario, [invariant], DEPTH, time.monotonic() + 120)
    assert invariant in result.failures, (mutant, result.status, result.failures)
    assert result.status == "failed"  # it stops once every invariant it judges has failed
    operations = result.failures[invariant].operations
    assert len(operations) <= len(scenario.setup) + 5, operations
    assert run_operations(session, operations, [invariant]).violated(invariant)
    reference = session_of(ReferenceDriver(store="memory"))
    assert not run_operations(reference, operations, [invariant]).violated(invariant)


def test_a_search_out_of_budget_is_unknown_and_the_run_says_so(tmp_path: Path) -> None:
    session = session_of(ReferenceDriver(store="memory"))
    scenario = scenarios(session.features)[0]
    result = explore(session, scenario, explored_ids(session.features), DEPTH, time.monotonic() - 1)
    assert result.status == "unknown" and result.depth_complete == 0

    report = small_run(tmp_path, "gate.i-receives-entry-i", explore_seconds=0.0).execute()
    assert report.exploration and {row.status for row in report.exploration} == {"unknown"}
    assert any(f.kind == "incomplete" and f.reason == "explore-budget" for f in report.findings)
    assert report.exit_code() == 2  # never a pass for what the explorer did not finish


class ForgetfulReset(ReferenceDriver):
    """reset() keeps a counter that leaks into every start's input: the same script
    reaches a different state the second time."""

    starts = 0

    def start(self, execution_id, flow_id, input):  # type: ignore[no-untyped-def]
        ForgetfulReset.starts += 1
        return super().start(execution_id, flow_id, {"id": "a", "n": ForgetfulReset.starts})


def test_a_kernel_whose_replays_differ_is_reported_nondeterministic() -> None:
    session = session_of(ForgetfulReset(store="memory"))
    scenario = scenarios(session.features)[0]
    result = explore(session, scenario, [], DEPTH, time.monotonic() + 60)
    assert result.transport_fault is not None and result.transport_fault.reason == "nondeterministic"
    assert "reset()" in str(result.transport_fault)


def test_the_run_reports_the_exploration_per_scenario(tmp_path: Path) -> None:
    report = small_run(tmp_path, "resume.gate-mismatch").execute()
    assert report.exit_code() == 0
    rows = {row.scenario: row for row in report.exploration}
    assert rows["two-gates"].status == "exhausted" and rows["two-gates"].invariants == ["resume.gate-mismatch"]
    (record,) = report.results
    stateful_only = small_run(tmp_path / "b", "resume.gate-mismatch", explore_depth=0).execute().results[0]
    assert record.examples == stateful_only.examples + sum(row.transitions for row in report.exploration)
