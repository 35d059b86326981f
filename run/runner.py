"""The runner behind `loomcheck run`: every selected invariant of the catalogue,
against one implementation, through its checks (the state machine, the
committed regression logs, the hostile-name corpus), into one report.

The implementation is untrusted and so is the suite's own input: a failure to
load it, a crash (whatever it raises), or a broken spec file becomes a finding
in the report, and the report is written after every phase, so an interrupted
run leaves one. The user's SIGINT or SIGTERM is seen by flag (contract/interrupts.py)
and stops the run at the next driver call or example."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import replace, dataclass, field
from pathlib import Path
from typing import Callable

from loomcheck import __version__
from loomcheck.contract.driver import Driver, Hello
from loomcheck.run.loading import ImplementationSpecError, TransportOptions, killable, resolve_factory
from loomcheck.run.replay import (difference_violation, expectation_of, minimise, replay, run_on_reference,
                                      run_operations)
from loomcheck.contract.script import Operation, from_model, to_json
from loomcheck.contract.needs import operations_need
from loomcheck.contract import interrupts
from loomcheck.contract.session import ImplementationFailed, RunAborted, Session, checkpoint, guarded, hello_of
from loomcheck.contract.shown import shown_exception
from loomcheck.corpora.view_digests import run_bound_answers
from loomcheck.corpora.emit_witnesses import run_emit_witnesses
from loomcheck.corpora.crash_faults import run_sigkill
from loomcheck.corpora.hostile_payloads import run_hostile_payloads
from loomcheck.corpora.hostile_names import run_hostile_names
from loomcheck.corpora.result import CorpusResult
from loomcheck.corpora.tampered_approvals import run_tampering
from loomcheck.corpora.legacy_override import run_legacy_override
from loomcheck.corpora.legacy_warnings import run_legacy_warnings
from loomcheck.corpora.warm_scan import run_warm_scan
from loomcheck.corpora.legacy_logs import run_legacy_logs
from loomcheck.explore.alphabet import scenarios
from loomcheck.run.coverage import Coverage, gap_findings
from loomcheck.run.rootcauses import Evidence, blame_difference, group
from loomcheck.explore.explorer import Exploration, explore
from loomcheck.machine.findings import InvariantViolated
from loomcheck.machine.state_machine import PROFILES, run_stateful
from loomcheck.fuzz.campaign import ExampleDatabase, run_seed, scoped
from loomcheck.properties.explain import Explanation
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import all_predicates
from loomcheck.run.manifest import Manifest, effective_features
from loomcheck.reports.model import (CorpusRecord, CoverageRow, ExplanationModel, ExplorationRecord, Finding, Implementation,
                                     InvariantRecord, Report, RootCause)
from loomcheck.reports.writers import write_json, write_junit
from loomcheck.spec.catalogue import Catalogue, Invariant
from loomcheck.spec.regressions import Found, RegressionLog, committed_regressions, dump_regression
from loomcheck.spec.vocabulary import version_key

Progress = Callable[[str, int, int], None]  # (phase, done, total)
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


WRITE_EVERY_SECONDS = 2.0
DEMONSTRATIONS = {"documented-hazard": "hazard", "documented-residual": "residual"}
# The checks each phase runs: a phase a defect of the suite stopped leaves its invariants unjudged.
PHASE_CHECKS: dict[str, Callable[[str], bool]] = {
    "stateful": lambda check: check == "stateful",
    "explorer": lambda check: check == "explorer",
    "regressions": lambda check: check == "regressions",
    "corpus": lambda check: check.startswith("corpus:"),
}


@dataclass
class Tally:
    """What the checks found for one invariant, before it becomes a record."""

    examples: int = 0
    failure: str | None = None
    examples_to_failure: int | None = None
    counterexample: str | None = None
    events: int | None = None
    operations: int | None = None
    errors: list[str] = field(default_factory=list)
    explanation: Explanation | None = None   # properties/explain.py, for the failure kept
    script: list[Operation] | None = None     # the failure's counterexample, replayed to group root causes
    log: RegressionLog | None = None          # or the committed regression log it came from
    crashes: list[str] = field(default_factory=list)  # driver exceptions in examples that then judged nothing


def select(catalogue: Catalogue, only: list[str] | None) -> list[Invariant]:
    if not only:
        return list(catalogue.invariants)
    chosen = []
    for wanted in only:
        matches = [inv for inv in catalogue.invariants if inv.id == wanted or inv.id.startswith(wanted.rstrip("*"))]
        if not matches:
            raise ValueError(f"--only {wanted!r} matches no invariant; known: {', '.join(catalogue.ids)}")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def committed_path(label: str) -> str:
    """A committed regression log named as it sits in the package (spec/regressions/NAME.json),
    not by this machine's absolute path, so a committed report reads the same everywhere."""
    path = Path(label)
    return "/".join(path.parts[-3:]) if path.parts[-3:-1] == ("spec", "regressions") else label


def not_applicable_because(invariant: Invariant, hello: Hello, withheld: dict[str, str] | None = None) -> str | None:
    """`withheld`: features hello declares that the implementation's manifest marks unsupported, with why."""
    withheld = withheld or {}
    missing = [f for f in invariant.requires if f not in hello.features or f in withheld]
    if missing:
        held = [f for f in missing if f in withheld]
        if held:
            return f"needs driver feature(s) {', '.join(missing)}; the manifest marks {', '.join(held)} unsupported: " \
                   f"{withheld[held[0]]}"
        return f"needs driver feature(s) {', '.join(missing)}, which {hello.name} does not declare"
    if version_key(invariant.since) > version_key(hello.eventSchema):
        return f"applies from EVENT_SCHEMA {invariant.since}; {hello.name} declares {hello.eventSchema}"
    return None


class Run:
    def __init__(self, impl: str, catalogue: Catalogue, *, profile: str = "ci", only: list[str] | None = None,
                 report_dir: Path = Path("loomcheck-report"), seed: int | None = None,
                 progress: Progress | None = None, transport: TransportOptions | None = None,
                 manifest: Manifest | None = None, explore_depth: int | None = None,
                 explore_seconds: float | None = None, database: ExampleDatabase | None = None,
                 profile_checks: str = "advisory") -> None:
        if profile not in PROFILES:
            raise ValueError(f"--profile {profile!r}: choose one of {', '.join(PROFILES)}")
        self.impl = impl
        self.catalogue = catalogue
        self.selected = select(catalogue, only)
        self.budget = PROFILES[profile]
        self.explore_depth = self.budget.explore_depth if explore_depth is None else explore_depth
        self.explore_seconds = self.budget.explore_seconds if explore_seconds is None else explore_seconds
        self.seed = run_seed(seed, self.budget.derandomize)  # issue 9: a randomised run records the seed it drew
        self.database = database  # a Hypothesis example database (fuzz/campaign.py); None keeps ci reproducible
        self.report_dir = report_dir
        self._written: dict[str, str] = {}  # a counterexample's operations (as JSON) -> the file this run wrote them to
        self.transport = transport or TransportOptions()
        self.manifest = manifest
        self._on_progress = progress or (lambda phase, done, total: None)
        self._last_write = time.monotonic()
        self.tallies: dict[str, Tally] = {inv.id: Tally() for inv in self.selected}
        self.coverage = Coverage()
        self.layer = "stateful"  # the coverage layer the steps being applied belong to
        self.na: dict[str, str] = {}
        # Invariants some of whose cases were skipped for a feature not declared (contract/needs.py), with why:
        # one no case could judge at all is not applicable, never "no check ran".
        self.skipped: dict[str, str] = {}
        self.evidence: dict[str, Evidence] = {}  # failing invariant -> what its counterexample violates
        self.blamed: dict[str, str] = {}  # regression log name -> the invariant its difference counts against
        self.replayed: list[tuple[str, RegressionLog, list[str]]] = []  # logs run (label, log, its outcomes here)
        self.report = Report(suiteVersion=__version__, implementation=Implementation(spec=impl), profile=profile,
                             seed=self.seed, started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                             profileChecks=profile_checks)
        self.driver: Driver | None = None
        self.load_failure: str | None = None  # the factory could not make a driver: the caller's tool error
        self.finished: set[str] = set()  # checks that ran to their end (stateful, explorer, corpus:NAME ...)
        self.suite_failed = False  # a phase stopped on a defect of the suite: the run is not complete

    # -- the run ---------------------------------------------------------------------
    def progress(self, phase: str, done: int, total: int) -> None:
        """Progress for the display, and the report rewritten every few seconds: a run
        interrupted in the middle of a phase leaves a valid, partial one."""
        self._on_progress(phase, done, total)
        checkpoint()  # between examples and cases: the user's signal stops the run here
        if time.monotonic() - self._last_write > WRITE_EVERY_SECONDS:
            self._records()
            self._write(final=False)
            self._last_write = time.monotonic()

    def execute(self) -> Report:
        """The whole run. The user's SIGINT or SIGTERM (by flag, contract/interrupts.py, when this
        is the main thread) stops it with a partial report, stopped "interrupted", and then
        raises KeyboardInterrupt, as a Ctrl-C would have."""
        with interrupts.handled():
            self._execute()
        if self.report.stopped == "interrupted":
            raise KeyboardInterrupt
        return self.report

    def _execute(self) -> None:
        began = time.monotonic()
        try:
            session = self._connect()
            if session is not None:
                self._phase("stateful", lambda: self._stateful(session))
                self._phase("explorer", lambda: self._explore(session))
                self._phase("regressions", lambda: self._regressions(session))
                self._phase("corpus", lambda: self._corpus(session))
                self._phase("root causes", lambda: self._group_failures(session))
                self.report.complete = not self.suite_failed
                self._coverage_gaps()
        except KeyboardInterrupt:  # the user's signal while their module was imported (run/loading.py)
            self.report.complete, self.report.stopped = False, "interrupted"
        except RunAborted as aborted:
            self.report.complete = False
            if aborted.reason == "interrupted":  # the user's: no finding about anyone
                self.report.stopped = "interrupted"
            else:
                self.report.stopped = aborted.detail
                kind = "suite-error" if aborted.reason == "suite" else "implementation-error"
                self._finding(kind, f"the run stopped: {aborted.detail}", reason=_reason(aborted.reason))
        finally:
            self.report.wallSeconds = round(time.monotonic() - began, 2)
            self._records()
            self._write(final=True)
            self._close()

    def _close(self) -> None:
        """close(), even after the user's signal (a stdio kernel's process must not outlive the
        run), and not interruptible by one: the report is written already."""
        if self.driver is None:
            return
        try:
            self.driver.close()
        except BaseException as exc:  # noqa: BLE001 - whatever it raises, SystemExit included
            if interrupts.requested() is None:  # a close after the user's signal is nobody's finding
                self._finding("implementation-error", f"close: raised {shown_exception(exc)}")
                self._records()
                self._write(final=True)

    def _connect(self) -> Session | None:
        try:
            factory = resolve_factory(self.impl, self.transport)
        except ImplementationSpecError as exc:
            self.load_failure = str(exc)
            self._finding("implementation-error", str(exc))
            self.report.stopped = "the implementation could not be loaded"
            return None
        try:
            self.driver = guarded("factory", factory)  # whatever their factory raises: SystemExit too
        except ImplementationFailed as failed:
            self.load_failure = f"{self.impl}: the factory {failed.detail}"
            self._finding("implementation-error", self.load_failure)
            self.report.stopped = "the implementation could not be loaded"
            return None
        try:
            hello = hello_of(self.driver)
        except ImplementationFailed as failed:
            self._finding("implementation-error", str(failed), reason=failed.reason)
            self.report.stopped = "the implementation's hello failed"
            return None
        command = getattr(self.driver, "command", None)
        self.report.implementation = Implementation(spec=self.impl, name=hello.name, version=hello.version,
                                                    eventSchema=hello.eventSchema, features=list(hello.features),
                                                    transport=getattr(self.driver, "transport", "in-process"),
                                                    command=command)
        features = effective_features(hello.features, self.manifest)
        reason = (self.manifest.features.reason if self.manifest is not None else None) or "no reason given"
        withheld = {f: reason for f in hello.features if f not in features}
        self.hello = hello.model_copy(update={"features": features})  # what every check treats as declared
        for inv in self.selected:
            why = not_applicable_because(inv, hello, withheld)
            declared = self.manifest.not_applicable_reason(inv.id) if self.manifest is not None else None
            if why is None and declared is not None:
                why = f"the manifest: {declared}"
            if why:
                self.na[inv.id] = why
        self._records()
        self._write(final=False)  # a report exists from here on, however the run ends
        return self._observed(Session(self.driver, frozenset(features), deadline=self.transport.deadline))

    def _observed(self, session: Session) -> Session:
        """Every step the session records is credited to the layer of the phase applying it."""
        # layer None: a replay that only regroups failures already found, credited to no layer
        session.observers.append(lambda step, trace: self.layer and self.coverage.observe(step, trace, self.layer))
        return session

    def _coverage_gaps(self) -> None:
        """A whole catalogue's run must reach every applicable refusal reason, scanner verdict,
        recording-table row and emit-guard rule; one it does not is the suite's failure (issue 9).
        A run of some invariants (--only), or one whose manifest sets invariants aside, reports
        its coverage without judging it: its checks were chosen to leave things out."""
        set_aside = any(why.startswith("the manifest:") for why in self.na.values())
        if len(self.selected) < len(self.catalogue.invariants) or set_aside:
            return
        gaps = self.coverage.gaps(self.hello.features)
        asked = self._asked_for({row.key for row in gaps}) if gaps else {}
        for row in gaps:
            if row.key in asked:  # the suite asked for it; the implementation never produced it: its finding
                self._finding("implementation-error", asked[row.key], reason="never-produced")
        self.report.findings.extend(gap_findings([row for row in gaps if row.key not in asked]))
        for error in self.coverage.errors[:3]:
            self._finding("suite-error", f"coverage: {error}", reason="coverage-error")

    def _asked_for(self, keys: set[str]) -> dict[str, str]:
        """Which coverage items the suite asked this implementation for: reached by the reference
        on a committed regression log this run replayed on the implementation (an item the suite
        never asks for stays the suite's gap). Each with the message of the implementation's finding."""
        from loomcheck.run.coverage import Coverage as Collector
        from loomcheck.reference.driver import ReferenceDriver

        asked: dict[str, str] = {}
        catalogue_rows = {row.key: row for row in self.coverage.summary(self.hello.features)}
        for label, log, outcomes in self.replayed:
            reference = ReferenceDriver(store="memory")
            collector, hits = Collector(), []
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

    def _phase(self, name: str, body: Callable[[], None]) -> None:
        self.layer = {"stateful": "stateful", "explorer": "explorer", "regressions": "regressions"}.get(name, "corpus")
        try:
            body()
            self.finished.add(name)
        except ImplementationFailed as failed:
            self._finding("implementation-error", f"{name}: {failed}", reason=failed.reason)
        except Exception as exc:  # noqa: BLE001 - a defect of the suite must not lose the report
            self._finding("suite-error", f"{name}: {shown_exception(exc)}")
            self._unjudged(name, f"the {name} phase stopped on a defect of the suite: {shown_exception(exc)}")
        self._records()
        self._write(final=False)
        checkpoint()

    def _unjudged(self, phase: str, why: str) -> None:
        """The invariants a phase the suite's defect stopped did not finish judging: an error, never
        a pass on checks that did not run; and the run is not complete."""
        self.suite_failed = True
        runs = PHASE_CHECKS.get(phase)
        if runs is None:
            return  # root causes: every verdict stands, only their grouping is missing
        for inv in self.selected:
            tally = self.tallies[inv.id]
            pending = [c for c in inv.checks if runs(c) and c not in self.finished]
            if inv.id not in self.na and pending and tally.failure is None:
                tally.errors.append(why)

    def _active(self, check: str) -> list[Invariant]:
        return [inv for inv in self.selected if inv.id not in self.na and check in inv.checks]

    # -- checks ------------------------------------------------------------------------
    def _stateful(self, session: Session) -> None:
        invariants = self._active("stateful")
        if not invariants:
            return
        total = self.budget.max_examples
        self.progress("state machine", 0, total)
        known = all_predicates()
        ids = [inv.id for inv in invariants if inv.id in known]
        result = run_stateful(session, ids, self.budget, self.seed,
                              on_example=lambda n: self.progress("state machine", min(n, total), total),
                              database=scoped(self.database, self.hello.name))
        self.report.stateMachineSteps += result.steps
        for invariant_id, count in result.examples.items():
            self.tallies[invariant_id].examples += count
        for invariant_id, failure in result.failures.items():
            self._record_counterexample(session, invariant_id, failure)
            self.tallies[invariant_id].examples_to_failure = result.examples_to_failure.get(invariant_id)
        for error in result.errors:  # a fault of its process, or nondeterminism: the examples' verdicts are unknown
            path = self._write_counterexample("implementation-error", error.operations, None, str(error.failure))
            self._finding("implementation-error", f"state machine: {error.failure}", path, reason=error.failure.reason)
            for invariant_id in ids:
                if invariant_id not in result.failures:
                    self.tallies[invariant_id].errors.append(f"the implementation failed during the state machine: {error.failure}")
        self._crashes(result.crashes, ids)
        self.progress("state machine", total, total)

    def _crashes(self, crashes: list, ids: list[str]) -> None:
        """A driver exception is one finding for the operation and example where it happened (the
        first script per distinct message, shortest first); the invariants keep the verdicts the
        other examples gave them, and one that no example judged is an error naming the exception."""
        distinct: dict[str, object] = {}
        for crash in sorted(crashes, key=lambda c: len(c.operations)):
            distinct.setdefault(str(crash.failure), crash)
        for message, crash in list(distinct.items())[:5]:
            seen = sum(str(c.failure) == message for c in crashes)
            path = self._write_counterexample("implementation-error", crash.operations, None, message)  # type: ignore[attr-defined]
            self._finding("implementation-error", f"state machine: {message} (a script of {len(crash.operations)} "  # type: ignore[attr-defined]
                                                  f"operations; {seen} example(s) ended so)", path)
        if len(distinct) > 5:
            self._finding("implementation-error", f"state machine: {len(distinct) - 5} more distinct driver exceptions")
        for invariant_id in ids if crashes else []:
            self.tallies[invariant_id].crashes.append(f"state machine: {next(iter(distinct))}")

    def _explore(self, session: Session) -> None:
        """Every history of each scenario's operations up to the profile's depth (explore/), judged
        by every invariant the state machine did not already fail. Each scenario gets an equal share
        of what is left of the budget; one that does not finish is reported unknown, never passed."""
        known = all_predicates()
        ids = [inv.id for inv in self._active("explorer") if inv.id in known and self.tallies[inv.id].failure is None]
        found = scenarios(frozenset(self.hello.features))
        if not ids or not found or self.explore_depth < 1:
            return
        if any(f.reason for f in self.report.findings if f.kind == "implementation-error"):
            return  # its process already hung, died or lied: every restore would spend a restart
        stop = time.monotonic() + self.explore_seconds
        for done, scenario in enumerate(found):
            self.progress("explorer", done, len(found))
            share = (stop - time.monotonic()) / (len(found) - done)
            result = explore(session, scenario, ids, self.explore_depth, time.monotonic() + max(share, 0.0))
            self._explored(session, scenario.purpose, ids, result)
            if result.transport_fault is not None:
                break
            ids = [i for i in ids if i not in result.failures]
            if not ids:
                break
        self.progress("explorer", len(found), len(found))

    def _explored(self, session: Session, purpose: str, ids: list[str], result: Exploration) -> None:
        self.report.exploration.append(ExplorationRecord(
            scenario=result.scenario, purpose=purpose, depthTarget=result.depth_target,
            depthComplete=result.depth_complete, status=result.status, transitions=result.transitions,
            distinctStates=result.distinct, replayedOperations=result.replayed, seconds=result.seconds,
            invariants=list(ids), failures=sorted(result.failures)))
        for invariant_id in ids:
            self.tallies[invariant_id].examples += result.transitions
        for invariant_id, failure in result.failures.items():
            if self.tallies[invariant_id].failure is None:
                violated = InvariantViolated([Violation(invariant_id, failure.message)], failure.operations)
                self._record_counterexample(session, invariant_id, violated)
        for message, operations in result.errors:
            path = self._write_counterexample("implementation-error", operations, None, message)
            self._finding("implementation-error", f"explorer ({result.scenario}): {message}", path)
        if result.transport_fault is not None:
            fault = result.transport_fault
            self._finding("implementation-error", f"explorer ({result.scenario}): {fault}", reason=fault.reason)
            for invariant_id in ids:
                if invariant_id not in result.failures:
                    self.tallies[invariant_id].errors.append(f"the explorer stopped: {fault}")
        elif result.status == "unknown":
            self._finding("incomplete", f"explorer ({result.scenario}): the budget ran out at depth "
                                        f"{result.depth_complete} of {result.depth_target}; histories longer than "
                                        f"{result.depth_complete} operations are unknown, not passed "
                                        f"(--explore-depth, --explore-budget)", reason="explore-budget")

    def _record_counterexample(self, session: Session, invariant_id: str, failure: InvariantViolated) -> None:
        tally = self.tallies[invariant_id]
        from loomcheck.reference.driver import ReferenceDriver

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
        tally.counterexample = self._write_counterexample(invariant_id, operations, tally.failure, None)
        tally.operations, tally.script = len(operations), operations
        tally.events = sum(len(log) for log in rerun.logs.values())

    def _regressions(self, session: Session) -> None:
        logs = committed_regressions()
        for done, (label, log) in enumerate(logs):
            self.progress("regression logs", done, len(logs))
            active = {inv.id for inv in self._active("regressions")}
            targets = [i for i in log.invariants if i in active]
            if not targets:
                continue
            needs = operations_need([from_model(m) for m in log.operations])
            if not needs <= set(self.hello.features):
                missing = ", ".join(sorted(needs - set(self.hello.features)))
                for invariant_id in targets:
                    self.skipped.setdefault(invariant_id, f"its regression log {log.name} needs driver feature(s) {missing}")
                continue
            result = replay(session, log, targets)
            if result.failure is not None:  # a fault of its process, or an exception of its driver: a finding
                self._finding("implementation-error", f"regression logs: {committed_path(label)}: {result.failure}",
                              reason=result.failure.reason)
                for invariant_id in targets:  # their other checks keep their verdicts
                    self.tallies[invariant_id].crashes.append(f"{committed_path(label)}: {result.failure}")
                continue
            self.replayed.append((committed_path(label), log, list(result.outcomes)))
            blamed = self._blame(log, targets, result.differences)
            for invariant_id in targets:
                tally = self.tallies[invariant_id]
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
        self.progress("regression logs", len(logs), len(logs))

    def _blame(self, log: RegressionLog, targets: list[str], differences: list[str]) -> str | None:
        """The one invariant the log's first difference counts against (run/rootcauses.py)."""
        if not differences:
            return None
        from loomcheck.spec.vocabulary import refusals

        candidates = [i for i in targets if self.catalogue.get(i).kind not in DEMONSTRATIONS]  # a hazard: its predicate alone
        decisions = {inv.id: (inv.adr, inv.decision) for inv in self.catalogue.invariants}
        reasons = {r.reason: (r.adr, r.decision) for r in refusals().refusal}
        blamed = blame_difference(differences[0], candidates, decisions, reasons)
        if blamed is not None:
            self.blamed[log.name] = blamed
        return blamed

    def _group_failures(self, session: Session) -> None:
        """Every failing invariant's counterexample replayed, judged by every failing invariant, so that
        one bug is reported once (run/rootcauses.py). A replay that needs a process to kill, or an
        implementation whose process already failed, keeps each failure a cause of its own."""
        from loomcheck.run.loading import needs_a_process

        self.layer = None  # type: ignore[assignment]
        failing = [inv.id for inv in self.selected if inv.id not in self.na and inv.kind not in DEMONSTRATIONS
                   and self.tallies[inv.id].failure is not None]
        judged = [i for i in failing if i in all_predicates()]
        broken = any(f.reason for f in self.report.findings if f.kind == "implementation-error")
        for invariant_id in failing:
            tally = self.tallies[invariant_id]
            violates = {invariant_id}
            script = [from_model(m) for m in tally.log.operations] if tally.log is not None else tally.script
            if script and not broken and not needs_a_process(script) and len(failing) > 1:
                if tally.log is not None:
                    result = replay(session, tally.log, judged)
                    violates |= {i for i in [self.blamed.get(tally.log.name)] if i is not None}
                else:
                    result = run_operations(session, script, judged)
                if result.failure is None:
                    violates |= {v.invariant for v in result.violations}
            size = tally.operations if tally.counterexample else None  # a corpus case named, no script: last
            self.evidence[invariant_id] = Evidence(invariant_id, frozenset(violates), size, tally.counterexample)

    def _root_causes(self, records: list[InvariantRecord]) -> list[RootCause]:
        # A profile disagreement is not a conformance failure, so it heads no root cause unless counted (strict).
        strict = self.report.profileChecks == "strict"
        failing = [r for r in records if r.status == "fail" and (strict or not r.disagrees)]
        order = {inv.id: n for n, inv in enumerate(self.catalogue.invariants)}
        evidence = [self.evidence.get(r.id) or Evidence(r.id, frozenset({r.id}), r.counterexampleOperations
                                                        if r.counterexample else None, r.counterexample) for r in failing]
        by_id = {r.id: r for r in failing}
        causes = []
        for cause in group(evidence, order):
            head = by_id[cause.head]
            for member in [cause.head, *cause.also, *cause.same]:
                by_id[member].rootCause = cause.head
            source = by_id[cause.evidence.invariant]  # whose counterexample it is (the head's, but for ties)
            causes.append(RootCause(head=head.id, adr=head.adr, decision=head.decision, title=head.title,
                                    message=source.message, counterexample=source.counterexample,
                                    counterexampleOperations=source.counterexampleOperations, alsoViolated=cause.also,
                                    sameCause=cause.same))
        return causes

    def _corpus(self, session: Session) -> None:
        self._each_corpus("corpus:sigkill", lambda: self._sigkill())
        for check, label, run in CORPORA:
            invariants = self._active(check)
            if invariants:
                def one(check: str = check, label: str = label, run=run, invariants=invariants) -> None:
                    self.layer = "symbolic" if check == "corpus:emit-witnesses" else "corpus"  # z3's witnesses
                    self.progress(label, 0, 1)
                    result = run(session, tuple(inv.id for inv in invariants))
                    self._corpus_result(session, check, invariants, result)
                    self.progress(label, 1, 1)
                self._each_corpus(check, one)

    def _each_corpus(self, check: str, body: Callable[[], None]) -> None:
        """A fault of the implementation's process in one corpus is a finding for that
        corpus's invariants; the next corpus starts from a reset (and a new process)."""
        try:
            body()
            self.finished.add(check)
        except ImplementationFailed as failed:
            self._finding("implementation-error", f"{check}: {failed}", reason=failed.reason)
            for inv in self._active(check):
                self.tallies[inv.id].errors.append(f"{check}: the implementation failed: {failed}")

    def _sigkill(self) -> None:
        """Real crash faults need a process to kill: a stdio implementation's own program, or a
        Python one served by `loomcheck serve` in a process of its own, on a store directory
        it keeps across the kills (feature "durable")."""
        invariants = self._active("corpus:sigkill")
        if not invariants or "durable" not in self.hello.features:
            return
        driver = killable(self.impl, self.transport)
        try:
            self.progress("real crashes", 0, 1)
            features = frozenset(effective_features(hello_of(driver).features, self.manifest))
            process_session = self._observed(Session(driver, features, deadline=self.transport.deadline))
            result = run_sigkill(process_session, tuple(inv.id for inv in invariants), exhaustive=self.report.profile == "campaign")
            self._corpus_result(process_session, "corpus:sigkill", invariants, result)
            self.progress("real crashes", 1, 1)
        finally:
            driver.close()

    def _corpus_result(self, session: Session, check: str, invariants: list[Invariant], result: CorpusResult) -> None:
        kinds = {inv.id: inv.kind for inv in self.catalogue.invariants}
        shown = [v for v in result.violations if kinds.get(v.invariant) in DEMONSTRATIONS]
        self.report.corpora.append(CorpusRecord(name=check.split(":", 1)[1], cases=result.cases,
                                                perCategory=dict(result.per_category),
                                                violations=len(result.violations) - len(shown),
                                                demonstrations=len(shown),
                                                invariants=[inv.id for inv in invariants]))
        for inv in invariants:
            tally = self.tallies[inv.id]
            tally.examples += result.cases
            for missing in result.skipped:
                self.skipped.setdefault(inv.id, f"the {check.split(':', 1)[1]} corpus's cases need driver "
                                                f"feature(s) {missing}")
            mine = [v for v in result.violations if v.invariant == inv.id or len(invariants) == 1]
            if mine and tally.failure is None:
                tally.failure = f"{check.split(':', 1)[1]} corpus: {mine[0].message}"
                script = result.scripts.get(inv.id, result.operations)
                if script:
                    tally.counterexample = self._write_counterexample(inv.id, script, mine[0].message, None)
                    tally.operations, tally.script = len(script), script
                    rerun = run_operations(session, script, [])
                    tally.events = sum(len(log) for log in rerun.logs.values())
                    tally.explanation = rerun.explain(replace(mine[0], invariant=inv.id))

    # -- output ------------------------------------------------------------------------
    def _write_counterexample(self, name: str, operations: list[Operation], message: str | None,
                              error: str | None) -> str | None:
        if not operations:  # a failure that did not reproduce shrinks to nothing: there is no log to write
            return None
        expected = run_on_reference(operations, self.transport)
        log = RegressionLog.model_validate({
            "name": name, "adr": self._adr_of(name), "origin": "counterexample",
            "description": f"Shrunk counterexample found by loomcheck {__version__} against {self.impl}; "
                           f"'expect' is what the reference kernel does with the same operations.",
            "invariants": [name] if name in self.tallies else [inv.id for inv in self.selected],
            "operations": [to_json(op) for op in operations],
            "expect": expectation_of(expected).model_dump() if expected.failure is None else None,
            "found": Found(invariant=name, message=message or error or "", implementation=self.impl).model_dump(),
        })
        # The same failure found again (an implementation error, say) keeps its one file; several
        # implementation errors in one run each keep their own (not an invariant: no one tally).
        # Keyed by the file's text: a view nested past JSON's recursion limit is written fine there.
        key = dump_regression(log)
        if key in self._written:
            return self._written[key]
        taken = set(self._written.values()) if name not in self.tallies else set()
        path = next(p for n in range(1, len(taken) + 2)
                    for p in [self.report_dir / "counterexamples" / (f"{name}.json" if n == 1 else f"{name}-{n}.json")]
                    if str(p) not in taken)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(key, encoding="utf-8")
        self._written[key] = str(path)
        return str(path)

    def _adr_of(self, invariant_id: str) -> str:
        try:
            return self.catalogue.get(invariant_id).adr
        except KeyError:
            return "0104"

    def _finding(self, kind: str, message: str, counterexample: str | None = None, reason: str | None = None) -> None:
        self.report.findings.append(Finding(kind=kind, message=message, counterexample=counterexample,  # type: ignore[arg-type]
                                            reason=reason))

    def _records(self) -> None:
        records = []
        for inv in self.selected:
            tally = self.tallies[inv.id]
            record = InvariantRecord(id=inv.id, adr=inv.adr, decision=inv.decision, title=inv.title, kind=inv.kind,
                                     statement=inv.statement, checks=list(inv.checks), status="pass",
                                     examples=tally.examples, profile=inv.profile)
            if inv.id in self.na:
                record.status, record.message = "not-applicable", self.na[inv.id]
            elif inv.kind in DEMONSTRATIONS and not tally.errors and tally.examples:
                # A demonstration: whether the hazard (or residual) shows on this kernel, never a pass or a failure.
                shown = DEMONSTRATIONS[inv.kind]
                record.status = shown if tally.failure is not None else "not-reproduced"
                record.message = tally.failure or f"the demonstration did not show the {shown} on this implementation"
                record.counterexample = tally.counterexample
            elif tally.failure is not None:
                record.status, record.message = "fail", tally.failure
                record.counterexample = tally.counterexample
                record.counterexampleEvents, record.counterexampleOperations = tally.events, tally.operations
                record.examplesToFailure = tally.examples_to_failure
                if tally.explanation is not None:
                    record.explanation = ExplanationModel.model_validate(tally.explanation.to_json())
            elif tally.errors:
                record.status, record.message = "error", tally.errors[0]
            elif tally.examples == 0 and inv.id in self.skipped:
                record.status = "not-applicable"
                record.message = f"{self.skipped[inv.id]}, which {self.report.implementation.name} does not declare"
            elif tally.examples == 0 and tally.crashes:
                record.status, record.message = "error", f"every check of it met an implementation error: {tally.crashes[0]}"
            elif tally.examples == 0:
                record.status = "error"
                record.message = "no check ran for this invariant" + ("" if self.report.complete else " (the run stopped early)")
            records.append(record)
        self.report.results = records
        self.report.rootCauses = self._root_causes(records)
        self.report.summarise()
        if hasattr(self, "hello"):
            self.report.coverage = [CoverageRow(**row.to_json()) for row in self.coverage.summary(self.hello.features)]

    def _write(self, final: bool) -> None:
        from loomcheck.reports.writers import write_html, write_markdown

        write_json(self.report, self.report_dir / "report.json")
        write_markdown(self.report, self.report_dir / "summary.md")
        if final:
            write_junit(self.report, self.report_dir / "junit.xml")
            write_html([self.report_dir / "report.json"], self.report_dir / "report.html")



def _reason(reason: str) -> str:
    return {"restarts": "restart-budget", "suite": "suite"}.get(reason, reason)
