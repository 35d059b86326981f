"""The phase of a run that drives the fixed corpora (corpora/) through the driver, the real
crash faults first: each corpus judges the invariants that name it, and a fault of the
implementation's process in one corpus is a finding for that corpus alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, hello_of
from loomcheck.corpora.crash_faults import run_sigkill
from loomcheck.corpora.emit_witnesses import run_emit_witnesses
from loomcheck.corpora.hostile_names import run_hostile_names
from loomcheck.corpora.hostile_payloads import run_hostile_payloads
from loomcheck.corpora.legacy_logs import run_legacy_logs
from loomcheck.corpora.legacy_override import run_legacy_override
from loomcheck.corpora.legacy_warnings import run_legacy_warnings
from loomcheck.corpora.warm_scan import run_warm_scan
from loomcheck.corpora.result import CorpusResult
from loomcheck.corpora.tampered_approvals import run_tampering
from loomcheck.corpora.view_digests import run_bound_answers
from loomcheck.reports.model import CorpusRecord
from loomcheck.run.applicability import declared_features
from loomcheck.run.loading import killable
from loomcheck.run.replay import run_operations
from loomcheck.run.state import RunState
from loomcheck.run.tally import DEMONSTRATIONS
from loomcheck.spec.catalogue import Invariant

# (check kind, progress label, runner(session, the invariants it judges))
CORPORA: tuple[tuple[str, str, Callable[[Session, tuple[str, ...]], CorpusResult]], ...] = (
    ("corpus:hostile-names", "hostile names", lambda session, ids: run_hostile_names(session)),
    ("corpus:hostile-payloads", "hostile payloads", lambda session, ids: run_hostile_payloads(session)),
    ("corpus:bound-answers", "bound answers", run_bound_answers),
    ("corpus:tampering", "signature tampering", run_tampering),
    ("corpus:legacy-logs", "legacy logs", run_legacy_logs),
    ("corpus:legacy-override", "legacy override", run_legacy_override),
    ("corpus:legacy-warnings", "legacy warnings", run_legacy_warnings),
    ("corpus:warm-scan", "warm scan", run_warm_scan),
    ("corpus:emit-witnesses", "emit witnesses", run_emit_witnesses),  # z3's boundary values (symbolic/guards.py)
)


def corpus_phase(run: RunState, session: Session) -> None:
    _each_corpus(run, "corpus:sigkill", lambda: _sigkill(run))
    for check, label, corpus in CORPORA:
        invariants = run.active(check)
        if invariants:
            def one(check: str = check, label: str = label, corpus: Callable = corpus,
                    invariants: list[Invariant] = invariants) -> None:
                run.layer = "symbolic" if check == "corpus:emit-witnesses" else "corpus"  # z3's witnesses
                run.progress(label, 0, 1)
                result = corpus(session, tuple(inv.id for inv in invariants))
                _corpus_result(run, session, check, invariants, result)
                run.progress(label, 1, 1)
            _each_corpus(run, check, one)


def _each_corpus(run: RunState, check: str, body: Callable[[], None]) -> None:
    """A fault of the implementation's process in one corpus is a finding for that
    corpus's invariants; the next corpus starts from a reset (and a new process)."""
    try:
        with run.charged(inv.id for inv in run.active(check)):
            body()
        run.finished.add(check)
    except ImplementationFailed as failed:
        run.finding("implementation-error", f"{check}: {failed}", reason=failed.reason)
        for inv in run.active(check):
            run.tallies[inv.id].errors.append(f"{check}: the implementation failed: {failed}")


def _sigkill(run: RunState) -> None:
    """Real crash faults need a process to kill: a stdio implementation's own program, or a
    Python one served by `loomcheck serve` in a process of its own, on a store directory
    it keeps across the kills (feature "durable")."""
    invariants = run.active("corpus:sigkill")
    if not invariants or "durable" not in run.features:
        return
    driver = killable(run.impl, run.transport)
    try:
        run.progress("real crashes", 0, 1)
        features = frozenset(declared_features(hello_of(driver).features, run.manifest))
        process_session = run.observed(Session(driver, features, deadline=run.transport.deadline))
        result = run_sigkill(process_session, tuple(inv.id for inv in invariants),
                             exhaustive=run.report.profile == "campaign")
        _corpus_result(run, process_session, "corpus:sigkill", invariants, result)
        run.progress("real crashes", 1, 1)
    finally:
        driver.close()


def _corpus_result(run: RunState, session: Session, check: str, invariants: list[Invariant],
                   result: CorpusResult) -> None:
    name = check.split(":", 1)[1]
    kinds = {inv.id: inv.kind for inv in run.catalogue.invariants}
    shown = [v for v in result.violations if kinds.get(v.invariant) in DEMONSTRATIONS]
    run.report.corpora.append(CorpusRecord(name=name, cases=result.cases, perCategory=dict(result.per_category),
                                           violations=len(result.violations) - len(shown),
                                           demonstrations=len(shown), invariants=[inv.id for inv in invariants]))
    for inv in invariants:
        tally = run.tallies[inv.id]
        tally.examples += result.cases
        for missing in result.skipped:
            run.skipped.setdefault(inv.id, f"the {name} corpus's cases need driver feature(s) {missing}")
        mine = [v for v in result.violations if v.invariant == inv.id or len(invariants) == 1]
        if mine and tally.failure is None:
            tally.failure = f"{name} corpus: {mine[0].message}"
            script = result.scripts.get(inv.id, result.operations)
            if script:
                rerun = run_operations(session, script, [])
                tally.counterexample = run.write_counterexample(inv.id, script, mine[0].message, None, did=rerun)
                tally.operations, tally.script = len(script), script
                tally.events = sum(len(log) for log in rerun.logs.values())
                tally.explanation = rerun.explain(replace(mine[0], invariant=inv.id))
