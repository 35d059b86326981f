"""The phase of a run that replays the committed regression logs (spec/regressions/): each log
judged by the invariants it names, and its difference from what it expects counted against
the one invariant it tests (run/rootcauses.py)."""

from __future__ import annotations

from loomcheck.contract.script import from_model
from loomcheck.contract.session import Session
from loomcheck.run.applicability import undeclared_needs
from loomcheck.run.replay import ReplayResult, difference_violation, replay
from loomcheck.run.rootcauses import blame_difference
from loomcheck.run.state import RunState, committed_path
from loomcheck.run.tally import DEMONSTRATIONS
from loomcheck.spec.regressions import RegressionLog, committed_regressions
from loomcheck.spec.vocabulary import refusals


def regression_phase(run: RunState, session: Session) -> None:
    logs = committed_regressions()
    for done, (label, log) in enumerate(logs):
        run.progress("regression logs", done, len(logs))
        active = {inv.id for inv in run.active("regressions")}
        targets = [i for i in log.invariants if i in active]
        if not targets:
            continue
        missing = undeclared_needs([from_model(m) for m in log.operations], run.features)
        if missing:
            for invariant_id in targets:
                run.skipped.setdefault(invariant_id, f"its regression log {log.name} needs driver feature(s) "
                                                     f"{', '.join(missing)}")
            continue
        with run.charged(targets):
            _replayed(run, session, label, log, targets)
    run.progress("regression logs", len(logs), len(logs))


def _replayed(run: RunState, session: Session, label: str, log: RegressionLog, targets: list[str]) -> None:
    """One log replayed and judged; a failure of the implementation is a finding."""
    result = replay(session, log, targets)
    if result.failure is not None:  # a fault of its process, or an exception of its driver: a finding
        run.finding("implementation-error", f"regression logs: {committed_path(label)}: {result.failure}",
                    reason=result.failure.reason)
        for invariant_id in targets:  # their other checks keep their verdicts
            run.tallies[invariant_id].crashes.append(f"{committed_path(label)}: {result.failure}")
        return
    run.replayed.append((committed_path(label), log, list(result.outcomes)))
    _judged(run, label, log, targets, result)


def _judged(run: RunState, label: str, log: RegressionLog, targets: list[str], result: ReplayResult) -> None:
    """Each invariant the log names, judged by its replay."""
    blamed = _blame(run, log, targets, result.differences)
    for invariant_id in targets:
        tally = run.tallies[invariant_id]
        tally.examples += 1
        problems = [v.message for v in result.violated(invariant_id)]
        if invariant_id == blamed:
            problems += result.differences  # a difference counts against the invariant it tests, once
        if problems and tally.failure is None:
            tally.failure = f"{log.name}: {problems[0]}"
            found = result.violated(invariant_id) or [difference_violation(invariant_id, log.name, problems[0], result)]
            tally.explanation = result.explain(found[0])
            tally.counterexample = committed_path(label)
            tally.operations, tally.log = len(log.operations), log
            tally.events = sum(len(v) for v in result.logs.values())


def _blame(run: RunState, log: RegressionLog, targets: list[str], differences: list[str]) -> str | None:
    """The one invariant the log's first difference counts against (run/rootcauses.py)."""
    if not differences:
        return None
    candidates = [i for i in targets if run.catalogue.get(i).kind not in DEMONSTRATIONS]  # a hazard: its predicate alone
    decisions = {inv.id: (inv.adr, inv.decision) for inv in run.catalogue.invariants}
    reasons = {r.reason: (r.adr, r.decision) for r in refusals().refusal}
    blamed = blame_difference(differences[0], candidates, decisions, reasons)
    if blamed is not None:
        run.blamed[log.name] = blamed
    return blamed
