"""The review after a run's checks: every failure's counterexample replayed against the other
failing invariants, so one bug is reported once (run/rootcauses.py), and the run's coverage
judged, an applicable item no layer reached being the suite's failure, or the implementation's
when the suite asked for it and never got it."""

from __future__ import annotations

from loomcheck.contract.script import from_model
from loomcheck.contract.session import Session, hello_of
from loomcheck.properties.checks import all_predicates
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.run.coverage import Coverage, gap_findings
from loomcheck.run.loading import needs_a_process
from loomcheck.run.replay import replay, run_operations
from loomcheck.run.rootcauses import Evidence
from loomcheck.run.state import RunState
from loomcheck.run.tally import DEMONSTRATIONS

COVERAGE_ERRORS_SHOWN = 3


def root_cause_phase(run: RunState, session: Session) -> None:
    """Every failing invariant's counterexample replayed, judged by every failing invariant, so that
    one bug is reported once (run/rootcauses.py). A replay that needs a process to kill, or an
    implementation whose process already failed, keeps each failure a cause of its own."""
    run.layer = None
    failing = [inv.id for inv in run.selected if inv.id not in run.na and inv.kind not in DEMONSTRATIONS
               and run.tallies[inv.id].failure is not None]
    judged = [i for i in failing if i in all_predicates()]
    broken = any(f.reason for f in run.report.findings if f.kind == "implementation-error")
    for done, invariant_id in enumerate(failing):
        run.progress("root causes", done, len(failing))
        tally = run.tallies[invariant_id]
        violates = {invariant_id}
        script = [from_model(m) for m in tally.log.operations] if tally.log is not None else tally.script
        if script and not broken and not needs_a_process(script) and len(failing) > 1:
            with run.charged([invariant_id]):
                if tally.log is not None:
                    result = replay(session, tally.log, judged)
                    violates |= {i for i in [run.blamed.get(tally.log.name)] if i is not None}
                else:
                    result = run_operations(session, script, judged)
            if result.failure is None:
                violates |= {v.invariant for v in result.violations}
        size = tally.operations if tally.counterexample else None  # a corpus case named, no script: last
        run.evidence[invariant_id] = Evidence(invariant_id, frozenset(violates), size, tally.counterexample)
    if failing:
        run.progress("root causes", len(failing), len(failing))


def judge_coverage(run: RunState) -> None:
    """A whole catalogue's run must reach every applicable refusal reason, scanner verdict,
    recording-table row and emit-guard rule; one it does not is the suite's failure, since the
    suite did not exercise it. A run of some invariants (--only), or one whose manifest sets
    invariants aside, reports its coverage without judging it: its checks were chosen to leave
    things out."""
    set_aside = any(why.startswith("the manifest:") for why in run.na.values())
    if len(run.selected) < len(run.catalogue.invariants) or set_aside:
        return
    gaps = run.coverage.gaps(run.features)
    asked = asked_for(run, {row.key for row in gaps}) if gaps else {}
    for row in gaps:
        if row.key in asked:  # the suite asked for it; the implementation never produced it: its finding
            run.finding("implementation-error", asked[row.key], reason="never-produced")
    run.report.findings.extend(gap_findings([row for row in gaps if row.key not in asked]))
    for error in run.coverage.errors[:COVERAGE_ERRORS_SHOWN]:
        run.finding("suite-error", f"coverage: {error}", reason="coverage-error")


def asked_for(run: RunState, keys: set[str]) -> dict[str, str]:
    """Which coverage items the suite asked this implementation for: reached by the reference
    on a committed regression log this run replayed on the implementation (an item the suite
    never asks for stays the suite's gap). Each with the message of the implementation's finding."""
    asked: dict[str, str] = {}
    catalogue_rows = {row.key: row for row in run.coverage.summary(run.features)}
    for label, log, outcomes in run.replayed:
        reference = ReferenceDriver(store="memory")
        collector, hits = Coverage(), []
        session = Session(reference, frozenset(hello_of(reference).features))
        session.observers.append(lambda step, trace: hits.append(collector.observe(step, trace, "regressions")))
        try:
            expected = run_operations(session, [from_model(m) for m in log.operations], [])
        finally:
            reference.close()
        for number, reached in enumerate(hits, start=1):
            for key in sorted((reached & keys) - set(asked)):
                row = catalogue_rows[key]
                where = f"ADR {row.adr} {row.decision}" if row.adr else row.decision
                want = expected.outcomes[number - 1] if number <= len(expected.outcomes) else "?"
                got = outcomes[number - 1] if number <= len(outcomes) else "?"
                asked[key] = (f"never produced: {row.kind} {row.name!r}, which {where} requires: {label} asks for it "
                              f"at operation {number} (a conforming kernel: {want}; this implementation: {got}), "
                              f"and no other check of the run reached it either")
    return asked
