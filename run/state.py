"""The state of one run, shared by its phases: the invariants selected, what the checks found for
each, which do not apply, the coverage reached, and the report, written again as the run goes
so that an interrupted run leaves a valid one (with the manifest's expectations applied)."""

from __future__ import annotations

import datetime as dt
import difflib
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from loomcheck import __version__
from loomcheck.contract.driver import Driver, Hello
from loomcheck.contract.script import Operation
from loomcheck.contract.boundary import RunAborted, checkpoint
from loomcheck.contract.session import Session
from loomcheck.fuzz.campaign import ExampleDatabase, run_seed
from loomcheck.machine.state_machine import PROFILES
from loomcheck.reports.model import CoverageRow, Finding, Implementation, Report
from loomcheck.reports.writers import write_html, write_json, write_junit, write_markdown
from loomcheck.run.applicability import declared_features, not_applicable_because
from loomcheck.run.counterexamples import CounterexampleFiles
from loomcheck.run.coverage import Coverage
from loomcheck.run.loading import TransportOptions
from loomcheck.run.manifest import Manifest, apply_manifest
from loomcheck.run.replay import ReplayResult
from loomcheck.run.rootcauses import Evidence, root_causes
from loomcheck.run.tally import Tally, Verdicts, record_of
from loomcheck.spec.catalogue import Catalogue, Invariant
from loomcheck.spec.regressions import RegressionLog

Progress = Callable[[str, int, int], None]  # (phase, done, total)
WRITE_EVERY_SECONDS = 2.0
ENOUGH_FAILURES = "enough-failures"  # RunAborted's reason when the caller's failure budget is spent


class EnoughFailures(RunAborted):
    """The run stops early, between examples, cases or phases: as many invariants failed as its
    caller wanted to see (pytest's -x and --maxfail)."""

    def __init__(self, count: int) -> None:
        super().__init__(ENOUGH_FAILURES, f"stopped after {count} failing invariant{'s' if count != 1 else ''}, "
                                          f"as asked (pytest -x or --maxfail)")


def select(catalogue: Catalogue, only: list[str] | None) -> list[Invariant]:
    """The invariants `--only` names, by id or prefix (`gate.`), in catalogue order; all without it."""
    if not only:
        return list(catalogue.invariants)
    chosen = []
    for wanted in only:
        matches = [inv for inv in catalogue.invariants if inv.id == wanted or inv.id.startswith(wanted.rstrip("*"))]
        if not matches:
            raise ValueError(f"--only {wanted!r} matches no invariant; {_nearest(wanted, catalogue)}")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def _nearest(wanted: str, catalogue: Catalogue) -> str:
    """The ids and prefixes nearest to a mistyped one, rather than the whole catalogue."""
    prefixes = sorted({inv.id.split(".")[0] + "." for inv in catalogue.invariants})
    nearest = difflib.get_close_matches(wanted, [*catalogue.ids, *prefixes], n=5, cutoff=0.6)
    if nearest:
        return f"did you mean {', '.join(nearest)}?"
    return f"no id is close (prefixes: {' '.join(prefixes)}; `loomcheck catalogue` lists every id)"


def committed_path(label: str) -> str:
    """A committed regression log named as it sits in the package (spec/regressions/NAME.json),
    not by this machine's absolute path, so a committed report reads the same everywhere."""
    path = Path(label)
    return "/".join(path.parts[-3:]) if path.parts[-3:-1] == ("spec", "regressions") else label


class RunState:
    """Everything one run knows; the phases (run/*_phase.py, run/review.py) read and add to it."""

    def __init__(self, impl: str, catalogue: Catalogue, *, profile: str = "ci", only: list[str] | None = None,
                 report_dir: Path = Path("loomcheck-report"), seed: int | None = None,
                 progress: Progress | None = None, transport: TransportOptions | None = None,
                 manifest: Manifest | None = None, explore_depth: int | None = None,
                 explore_seconds: float | None = None, database: ExampleDatabase | None = None,
                 profile_checks: str = "advisory", stop_after: int | None = None) -> None:
        if profile not in PROFILES:
            raise ValueError(f"--profile {profile!r}: choose one of {', '.join(PROFILES)}")
        self.impl = impl
        self.catalogue = catalogue
        self.selected = select(catalogue, only)
        self.budget = PROFILES[profile]
        self.explore_depth = self.budget.explore_depth if explore_depth is None else explore_depth
        self.explore_seconds = self.budget.explore_seconds if explore_seconds is None else explore_seconds
        self.seed = run_seed(seed, self.budget.derandomize)  # a randomised run records the seed it drew, to rerun it
        self.database = database  # a Hypothesis example database (fuzz/campaign.py); None keeps ci reproducible
        self.report_dir = report_dir
        self.transport = transport or TransportOptions()
        self.counterexamples = CounterexampleFiles(report_dir, impl, self.transport)
        self.manifest = manifest
        self._on_progress = progress or (lambda phase, done, total: None)
        self._last_write = time.monotonic()
        self.tallies: dict[str, Tally] = {inv.id: Tally() for inv in self.selected}
        self.coverage = Coverage()
        self.layer: str | None = "stateful"  # the coverage layer the steps being applied belong to
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
        self.hello: Hello | None = None  # what the implementation declares, less what its manifest withholds
        self.load_failure: str | None = None  # the factory could not make a driver: the caller's tool error
        self.finished: set[str] = set()  # checks that ran to their end (stateful, explorer, corpus:NAME ...)
        self.suite_failed = False  # a phase stopped on a defect of the suite: the run is not complete
        self.stop_after = stop_after  # stop once this many invariants fail (unexpectedly), None: never
        self._failures_seen = 0
        self.unjudged: set[str] = set()  # invariants a stopped run left with checks not run
        self.seconds: dict[str, float] = {inv.id: 0.0 for inv in self.selected}  # each one's share of the time

    @property
    def features(self) -> frozenset[str]:
        """The features every check treats as declared (none before hello)."""
        return frozenset(self.hello.features) if self.hello is not None else frozenset()

    def meet(self, hello: Hello) -> None:
        """The implementation said hello: the report names it, and every selected invariant
        that does not apply to it (run/applicability.py) is set aside with why."""
        self.report.implementation = Implementation(spec=self.impl, name=hello.name, version=hello.version,
                                                    eventSchema=hello.eventSchema, features=list(hello.features),
                                                    transport=getattr(self.driver, "transport", "in-process"),
                                                    command=getattr(self.driver, "command", None))
        self.hello = hello.model_copy(update={"features": declared_features(hello.features, self.manifest)})
        for inv in self.selected:
            why = not_applicable_because(inv, hello, self.manifest)
            if why:
                self.na[inv.id] = why

    def active(self, check: str) -> list[Invariant]:
        """The selected invariants that apply and that `check` judges."""
        return [inv for inv in self.selected if inv.id not in self.na and check in inv.checks]

    def progress(self, phase: str, done: int, total: int) -> None:
        """Progress for the display, and the report rewritten every few seconds: a run
        interrupted in the middle of a phase leaves a valid, partial one."""
        self._on_progress(phase, done, total)
        checkpoint()  # between examples and cases: the user's signal stops the run here
        self.stop_if_enough_failures()
        if time.monotonic() - self._last_write > WRITE_EVERY_SECONDS:
            self.records()
            self.write(final=False)
            self._last_write = time.monotonic()

    def stop_if_enough_failures(self) -> None:
        """Raise EnoughFailures once `stop_after` invariants fail as the pytest items will show them:
        not a failure the manifest expects, nor an advisory profile disagreement."""
        failing = sum(tally.failure is not None for tally in self.tallies.values())
        if self.stop_after is None or failing == self._failures_seen:
            return
        self._failures_seen = failing
        self.records()
        strict = self.report.profileChecks == "strict"
        counted = [r for r in self.report.results
                   if r.status == "fail" and not r.excused and (strict or not r.disagrees)]
        if len(counted) >= self.stop_after:
            raise EnoughFailures(len(counted))

    @contextmanager
    def charged(self, ids: Iterable[str]) -> Iterator[None]:
        """The time spent inside, shared equally by the invariants `ids` judges: each invariant's
        own duration (a pytest item's), never the whole run's."""
        ids = list(ids)
        began = time.monotonic()
        try:
            yield
        finally:
            for invariant_id in ids:
                self.seconds[invariant_id] += (time.monotonic() - began) / len(ids)

    def observed(self, session: Session) -> Session:
        """Every step the session records is credited to the layer of the phase applying it."""
        # layer None: a replay that only regroups failures already found, credited to no layer
        session.observers.append(lambda step, trace: self.layer and self.coverage.observe(step, trace, self.layer))
        return session

    def finding(self, kind: str, message: str, counterexample: str | None = None, reason: str | None = None) -> None:
        self.report.findings.append(Finding(kind=kind, message=message, counterexample=counterexample,  # type: ignore[arg-type]
                                            reason=reason))

    def write_counterexample(self, name: str, operations: list[Operation], message: str | None,
                             error: str | None, did: ReplayResult | None = None) -> str | None:
        """`name`'s counterexample file (an invariant's, or an implementation error's), with what the
        implementation `did` with its operations when the caller replayed them."""
        mine = name in self.tallies
        adr = self.catalogue.get(name).adr if name in self.catalogue.ids else "0104"
        return self.counterexamples.write(name, operations, message, error, adr=adr, one_file=mine, did=did,
                                          invariants=[name] if mine else [inv.id for inv in self.selected])

    def records(self) -> None:
        """The report's records, root causes, manifest annotations, summary and coverage, from what
        the run found so far."""
        verdicts = Verdicts(self.na, self.skipped, self.report.implementation.name, self.report.complete)
        self.report.results = [record_of(inv, self.tallies[inv.id], verdicts) for inv in self.selected]
        order = {inv.id: n for n, inv in enumerate(self.catalogue.invariants)}
        self.report.rootCauses = root_causes(self.report.results, self.evidence, order,
                                             strict=self.report.profileChecks == "strict")
        if self.manifest is not None:
            apply_manifest(self.report, self.manifest)  # it summarises
        else:
            self.report.summarise()
        if self.hello is not None:
            self.report.coverage = [CoverageRow(**row.to_json()) for row in self.coverage.summary(self.hello.features)]

    def write(self, final: bool) -> None:
        write_json(self.report, self.report_dir / "report.json")
        write_markdown(self.report, self.report_dir / "summary.md")
        if final:
            write_junit(self.report, self.report_dir / "junit.xml")
            write_html(self.report, self.report_dir / "report.json", self.report_dir / "report.html")
