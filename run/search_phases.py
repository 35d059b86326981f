"""The two phases of a run that search for a failing history: the state machine (random
examples, machine/) and the bounded exhaustive explorer (explore/). A failure either finds is
shrunk to the fewest operations that still violate the invariant and written as a
counterexample."""

from __future__ import annotations

import time
from typing import Any

from loomcheck.contract.session import Session, hello_of
from loomcheck.explore.alphabet import scenarios
from loomcheck.explore.explorer import Exploration, explore
from loomcheck.fuzz.campaign import scoped
from loomcheck.machine.findings import InvariantViolated
from loomcheck.machine.state_machine import run_stateful
from loomcheck.properties.checks import all_predicates
from loomcheck.properties.registry import Violation
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reports.model import ExplorationRecord
from loomcheck.run.replay import minimise, run_operations
from loomcheck.run.state import RunState

DISTINCT_CRASHES_SHOWN = 5


def stateful_phase(run: RunState, session: Session) -> None:
    """The state machine's examples, judged by every applicable invariant that has a predicate."""
    invariants = run.active("stateful")
    if not invariants:
        return
    total = run.budget.max_examples
    run.progress("state machine", 0, total)
    known = all_predicates()
    ids = [inv.id for inv in invariants if inv.id in known]
    with run.charged(ids):  # one machine judges them all: each its share
        result = run_stateful(session, ids, run.budget, run.seed,
                              on_example=lambda n: run.progress("state machine", min(n, total), total),
                              database=scoped(run.database, run.report.implementation.name))
    run.report.stateMachineSteps += result.steps
    for invariant_id, count in result.examples.items():
        run.tallies[invariant_id].examples += count
    for invariant_id, failure in result.failures.items():
        with run.charged([invariant_id]):  # shrinking is the failing invariant's own time
            record_counterexample(run, session, invariant_id, failure)
        run.tallies[invariant_id].examples_to_failure = result.examples_to_failure.get(invariant_id)
    for error in result.errors:  # a fault of its process, or nondeterminism: the examples' verdicts are unknown
        path = run.write_counterexample("implementation-error", error.operations, None, str(error.failure))
        run.finding("implementation-error", f"state machine: {error.failure}", path, reason=error.failure.reason)
        for invariant_id in ids:
            if invariant_id not in result.failures:
                run.tallies[invariant_id].errors.append(f"the implementation failed during the state machine: {error.failure}")
    _crashes(run, result.crashes, ids)
    run.progress("state machine", total, total)


def _crashes(run: RunState, crashes: list[Any], ids: list[str]) -> None:
    """A driver exception is one finding for the operation and example where it happened (the
    first script per distinct message, shortest first); the invariants keep the verdicts the
    other examples gave them, and one that no example judged is an error naming the exception."""
    distinct: dict[str, Any] = {}
    for crash in sorted(crashes, key=lambda c: len(c.operations)):
        distinct.setdefault(str(crash.failure), crash)
    for message, crash in list(distinct.items())[:DISTINCT_CRASHES_SHOWN]:
        seen = sum(str(c.failure) == message for c in crashes)
        path = run.write_counterexample("implementation-error", crash.operations, None, message)
        run.finding("implementation-error", f"state machine: {message} (a script of {len(crash.operations)} "
                                            f"operations; {seen} example(s) ended so)", path)
    if len(distinct) > DISTINCT_CRASHES_SHOWN:
        run.finding("implementation-error",
                    f"state machine: {len(distinct) - DISTINCT_CRASHES_SHOWN} more distinct driver exceptions")
    for invariant_id in ids if crashes else []:
        run.tallies[invariant_id].crashes.append(f"state machine: {next(iter(distinct))}")


def explorer_phase(run: RunState, session: Session) -> None:
    """Every history of each scenario's operations up to the profile's depth (explore/), judged
    by every invariant the state machine did not already fail. Each scenario gets an equal share
    of what is left of the budget; one that does not finish is reported unknown, never passed."""
    known = all_predicates()
    ids = [inv.id for inv in run.active("explorer") if inv.id in known and run.tallies[inv.id].failure is None]
    found = scenarios(run.features)
    if not ids or not found or run.explore_depth < 1:
        return
    if any(f.reason for f in run.report.findings if f.kind == "implementation-error"):
        return  # its process already hung, died or lied: every restore would spend a restart
    stop = time.monotonic() + run.explore_seconds
    for done, scenario in enumerate(found):
        run.progress("explorer", done, len(found))
        share = (stop - time.monotonic()) / (len(found) - done)
        with run.charged(ids):
            result = explore(session, scenario, ids, run.explore_depth, time.monotonic() + max(share, 0.0))
            _explored(run, session, scenario.purpose, ids, result)
        if result.transport_fault is not None:
            break
        ids = [i for i in ids if i not in result.failures]
        if not ids:
            break
    run.progress("explorer", len(found), len(found))


def _explored(run: RunState, session: Session, purpose: str, ids: list[str], result: Exploration) -> None:
    run.report.exploration.append(ExplorationRecord(
        scenario=result.scenario, purpose=purpose, depthTarget=result.depth_target,
        depthComplete=result.depth_complete, status=result.status, transitions=result.transitions,
        distinctStates=result.distinct, replayedOperations=result.replayed, seconds=result.seconds,
        invariants=list(ids), failures=sorted(result.failures)))
    for invariant_id in ids:
        run.tallies[invariant_id].examples += result.transitions
    for invariant_id, failure in result.failures.items():
        if run.tallies[invariant_id].failure is None:
            violated = InvariantViolated([Violation(invariant_id, failure.message)], failure.operations)
            record_counterexample(run, session, invariant_id, violated)
    for message, operations in result.errors:
        path = run.write_counterexample("implementation-error", operations, None, message)
        run.finding("implementation-error", f"explorer ({result.scenario}): {message}", path)
    if result.transport_fault is not None:
        fault = result.transport_fault
        run.finding("implementation-error", f"explorer ({result.scenario}): {fault}", reason=fault.reason)
        for invariant_id in ids:
            if invariant_id not in result.failures:
                run.tallies[invariant_id].errors.append(f"the explorer stopped: {fault}")
    elif result.status == "unknown":
        run.finding("incomplete", f"explorer ({result.scenario}): the budget ran out at depth "
                                  f"{result.depth_complete} of {result.depth_target}; histories longer than "
                                  f"{result.depth_complete} operations are unknown, not passed "
                                  f"(--explore-depth, --explore-budget)", reason="explore-budget")


def record_counterexample(run: RunState, session: Session, invariant_id: str, failure: InvariantViolated) -> None:
    """The failure shrunk (kept only while the reference still passes the shorter script),
    explained and written as the invariant's counterexample."""
    tally = run.tallies[invariant_id]
    reference = ReferenceDriver(store="memory")
    try:
        operations, rerun = minimise(session, failure.operations, invariant_id,
                                     reference=Session(reference, frozenset(hello_of(reference).features)))
    finally:
        reference.close()
    if rerun is None:
        tally.failure = failure.violations[0].message + (" (note: replaying the shrunk script did not reproduce "
                                                         "it: the implementation is nondeterministic)")
        rerun = run_operations(session, operations, [invariant_id])
    else:
        kept = rerun.violated(invariant_id)[0]
        tally.failure = kept.message  # the message of the script kept
        tally.explanation = rerun.explain(kept)
    tally.counterexample = run.write_counterexample(invariant_id, operations, tally.failure, None, did=rerun)
    tally.operations, tally.script = len(operations), operations
    tally.events = sum(len(log) for log in rerun.logs.values())
