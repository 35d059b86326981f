"""The runner behind `loomcheck run`: every selected invariant of the catalogue, against one
implementation, through its phases in order (run/search_phases.py, run/regression_phase.py,
run/corpus_phase.py, run/review.py), into one report.

The implementation is untrusted and so is the suite's own input: a failure to load it, a crash
(whatever it raises) or a broken spec file becomes a finding in the report, and the report is
written after every phase, so an interrupted run leaves one. The user's SIGINT or SIGTERM is
seen by flag (contract/interrupts.py) and stops the run at the next driver call or example."""

from __future__ import annotations

import time
from typing import Callable

from loomcheck.contract import interrupts
from loomcheck.contract.boundary import ImplementationFailed, RunAborted, checkpoint, guarded
from loomcheck.contract.session import Session, hello_of
from loomcheck.contract.shown import shown_exception
from loomcheck.reports.model import Report
from loomcheck.run.corpus_phase import corpus_phase
from loomcheck.run.loading import ImplementationSpecError, resolve_factory
from loomcheck.run.regression_phase import regression_phase
from loomcheck.run.review import judge_coverage, root_cause_phase
from loomcheck.run.search_phases import explorer_phase, stateful_phase
from loomcheck.run.state import ENOUGH_FAILURES, RunState

Phase = Callable[[RunState, Session], None]
# The phases in the order they run; the checks each runs (a phase a defect of the suite
# stopped leaves its invariants unjudged) follow by name in PHASE_CHECKS.
PHASES: tuple[tuple[str, Phase], ...] = (
    ("stateful", stateful_phase),
    ("explorer", explorer_phase),
    ("regressions", regression_phase),
    ("corpus", corpus_phase),
    ("root causes", root_cause_phase),
)
PHASE_CHECKS: dict[str, Callable[[str], bool]] = {
    "stateful": lambda check: check == "stateful",
    "explorer": lambda check: check == "explorer",
    "regressions": lambda check: check == "regressions",
    "corpus": lambda check: check.startswith("corpus:"),
}
# The coverage layer a phase's steps are credited to (a corpus phase may name another: z3's witnesses).
LAYER_OF = {"stateful": "stateful", "explorer": "explorer", "regressions": "regressions"}


class Run(RunState):
    """One run: connect, every phase in turn, and the report written however it ends."""

    def execute(self) -> Report:
        """The whole run. The user's SIGINT or SIGTERM (by flag, contract/interrupts.py, when this
        is the main thread) stops it with a partial report, stopped "interrupted", and then
        raises KeyboardInterrupt, as a Ctrl-C would have."""
        with interrupts.handled():
            self._execute()
        if self.report.stopped == "interrupted":
            raise KeyboardInterrupt
        return self.report

    def phase(self, name: str, body: Callable[[], None]) -> None:
        """One phase: whatever it raises becomes a finding, and the report is written after it."""
        self.layer = LAYER_OF.get(name, "corpus")
        try:
            body()
            self.finished.add(name)
        except ImplementationFailed as failed:
            self.finding("implementation-error", f"{name}: {failed}", reason=failed.reason)
        except Exception as exc:  # noqa: BLE001 - a defect of the suite must not lose the report
            self.finding("suite-error", f"{name}: {shown_exception(exc)}")
            self._unjudged(name, f"the {name} phase stopped on a defect of the suite: {shown_exception(exc)}")
        self.records()
        self.write(final=False)
        checkpoint()

    def _execute(self) -> None:
        began = time.monotonic()
        try:
            session = self.connect()
            if session is not None:
                for number, (name, body) in enumerate(PHASES):
                    self.phase(name, lambda body=body: body(self, session))
                    if any(later in PHASE_CHECKS for later, _ in PHASES[number + 1:]):
                        self.stop_if_enough_failures()  # while checks remain to be run
                self.report.complete = not self.suite_failed
                judge_coverage(self)
        except KeyboardInterrupt:  # the user's signal while their module was imported (run/loading.py)
            self.report.complete, self.report.stopped = False, "interrupted"
        except RunAborted as aborted:
            self.report.complete = False
            if aborted.reason == "interrupted":  # the user's: no finding about anyone
                self.report.stopped = "interrupted"
            elif aborted.reason == ENOUGH_FAILURES:  # the caller's: what was not judged is said, not passed
                self.report.stopped = aborted.detail
                for phase in PHASE_CHECKS:
                    self.unjudged.update(self._unfinished(phase, f"not judged: the run {aborted.detail}"))
            else:
                self.report.stopped = aborted.detail
                kind = "suite-error" if aborted.reason == "suite" else "implementation-error"
                self.finding(kind, f"the run stopped: {aborted.detail}", reason=_reason(aborted.reason))
        finally:
            self.report.wallSeconds = round(time.monotonic() - began, 2)
            self.records()
            self.write(final=True)
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
                self.finding("implementation-error", f"close: raised {shown_exception(exc)}")
                self.records()
                self.write(final=True)

    def connect(self) -> Session | None:
        """The implementation loaded, made and greeted; None (with a finding) when it cannot be."""
        try:
            factory = resolve_factory(self.impl, self.transport)
        except ImplementationSpecError as exc:
            self.load_failure = str(exc)
            self.finding("implementation-error", str(exc))
            self.report.stopped = "the implementation could not be loaded"
            return None
        try:
            self.driver = guarded("factory", factory)  # whatever their factory raises: SystemExit too
        except ImplementationFailed as failed:
            self.load_failure = f"{self.impl}: the factory {failed.detail}"
            self.finding("implementation-error", self.load_failure)
            self.report.stopped = "the implementation could not be loaded"
            return None
        try:
            hello = hello_of(self.driver)
        except ImplementationFailed as failed:
            self.finding("implementation-error", str(failed), reason=failed.reason)
            self.report.stopped = "the implementation's hello failed"
            return None
        self.meet(hello)
        self.records()
        self.write(final=False)  # a report exists from here on, however the run ends
        return self.observed(Session(self.driver, self.features, deadline=self.transport.deadline))

    def _unjudged(self, phase: str, why: str) -> None:
        """The invariants a phase the suite's defect stopped did not finish judging: an error, never
        a pass on checks that did not run; and the run is not complete."""
        self.suite_failed = True
        self._unfinished(phase, why)

    def _unfinished(self, phase: str, why: str) -> list[str]:
        """Each invariant with a check of `phase` that did not run to its end, and no failure found,
        becomes an error saying `why`; the ids marked."""
        runs = PHASE_CHECKS.get(phase)
        if runs is None:
            return []  # root causes: every verdict stands, only their grouping is missing
        marked = []
        for inv in self.selected:
            tally = self.tallies[inv.id]
            pending = [c for c in inv.checks if runs(c) and c not in self.finished]
            if inv.id not in self.na and pending and tally.failure is None and why not in tally.errors:
                tally.errors.append(why)
                marked.append(inv.id)
        return marked


def _reason(reason: str) -> str:
    return {"restarts": "restart-budget", "suite": "suite"}.get(reason, reason)
