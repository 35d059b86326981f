"""report.html: one run's page. It leads with the verdict and the root causes, each with its
counterexample drawn as a timeline (reports/timeline.py) beside the decision's words, then the
per-invariant table (not-applicable rows folded), findings, corpora, exploration and coverage.
`loomcheck replay FILE --html OUT` draws the same picture for one regression log.
One self-contained file: inline CSS, no script, no network (docs/report-page.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loomcheck.reports.html import counterexample_file, counterexample_href, template
from loomcheck.reports.markdown import partial_because
from loomcheck.reports.model import ExplanationModel, InvariantRecord, Report, RootCause
from loomcheck.reports.timeline import Cited, Timeline, build_timeline, cite
from loomcheck.spec.errors import SpecError
from loomcheck.spec.files import deep_json
from loomcheck.spec.regressions import Found, OperationModel, RegressionLog, load_regression

EXIT_MEANING = {0: "everything passed", 1: "an invariant was violated",
                2: "the run is incomplete or unknown (partial, an implementation error, a finding)"}
VERDICT = {0: "passed", 1: "failed", 2: "incomplete"}


@dataclass(frozen=True)
class Cause:
    """One root cause as the page shows it."""

    number: int
    cause: RootCause
    record: InvariantRecord | None
    explanation: ExplanationModel | None
    timeline: Timeline | None
    cited: list[Cited]
    missing: str | None         # why there is no picture
    href: str | None
    file: str | None


@dataclass(frozen=True)
class Count:
    label: str
    value: int
    css: str


def render_report_page(report: Report, report_path: Path, html_dir: Path) -> str:
    """The page of the report at `report_path`, its links relative to `html_dir`."""
    code = report.exit_code()
    records = {r.id: r for r in report.results}
    causes = [_cause(number, cause, records.get(cause.head), report_path, html_dir)
              for number, cause in enumerate(report.rootCauses or _ungrouped(report), start=1)]
    return _writable(template("report.html.j2").render(
        report=report, code=code, verdict=VERDICT.get(code, "incomplete"), meaning=EXIT_MEANING.get(code, ""),
        counts=_counts(report), partial=None if report.complete else partial_because(report), causes=causes,
        grouped=bool(report.rootCauses), applicable=[r for r in report.results if r.status != "not-applicable"],
        na=[r for r in report.results if r.status == "not-applicable"], status=status_label,
        failed=sum(r.status == "fail" for r in report.results)))


def render_replay_page(log: RegressionLog, found: Found | None, implementation: str,
                       explained: list[tuple[str, ExplanationModel]], differences: list[str],
                       failure: str | None, verdict: str) -> str:
    """`loomcheck replay --html`: the log's operations as `implementation` ran them, one picture
    per invariant it violated (or one without highlights when none was)."""
    pictures = [(invariant, why, _drawn(log.operations, found, why)) for invariant, why in explained]
    if not pictures:
        pictures = [(None, None, _drawn(log.operations, found, None))]
    return _writable(template("replay.html.j2").render(log=log, implementation=implementation, pictures=pictures,
                                                       differences=differences, failure=failure, verdict=verdict))


def _ungrouped(report: Report) -> list[RootCause]:
    """A report written before failures were grouped by root cause: each failure on its own."""
    return [RootCause(head=r.id, adr=r.adr, decision=r.decision, title=r.title, message=r.message,
                      counterexample=r.counterexample) for r in report.results if r.status == "fail"]


def _drawn(operations: list[OperationModel], found: Found | None, explanation: ExplanationModel | None) -> Timeline:
    """The timeline, drawn at any depth: a payload may nest thousands deep (the hostile-payloads corpus)."""
    return deep_json(lambda: build_timeline(operations, found, explanation))


def _writable(page: str) -> str:
    """A page a UTF-8 file can hold: a hostile name's lone surrogate is kept as its escape."""
    return page.encode("utf-8", "backslashreplace").decode("utf-8")


def status_label(record: InvariantRecord) -> tuple[str, str]:
    """The status as the page shows it, and its CSS class."""
    if record.manifest == "expected-failure":
        return f"{record.status} (expected)", f"s-{record.status} expected"
    if record.manifest == "unexpected-pass":
        return "pass (unexpected)", "s-pass unexpected"
    if record.disagrees:  # a choice the ADRs leave open (spec/profiles.toml), not a violation
        return f"profile ({record.profile})", "s-hazard"
    return record.status, f"s-{record.status}"


def _counts(report: Report) -> list[Count]:
    s = report.summary
    counts = [Count(_plural(s.rootCauses, "root cause"), s.rootCauses, "fail" if s.rootCauses else "zero"),
              Count("passed", s.passed, "pass"), Count("failed", s.failed, "fail" if s.failed else "zero"),
              Count(_plural(s.errors, "error"), s.errors, "error" if s.errors else "zero"),
              Count("not applicable", s.notApplicable, "na")]
    extra = [Count(_plural(s.hazards, "demonstration"), s.hazards, "hazard"),
             Count("expected by the manifest", s.expectedFailures, "na"),
             Count(_plural(s.profileDisagreements, "profile disagreement"), s.profileDisagreements, "hazard"),
             Count(_plural(len(report.unexpectedPasses), "unexpected pass", "unexpected passes"),
                   len(report.unexpectedPasses), "error")]
    return counts + [c for c in extra if c.value]


def _plural(count: int, one: str, many: str | None = None) -> str:
    return one if count == 1 else many or one + "s"


def _cause(number: int, cause: RootCause, record: InvariantRecord | None, report_path: Path,
           html_dir: Path) -> Cause:
    explanation = record.explanation if record is not None else None
    log, missing = _counterexample(cause.counterexample, report_path)
    href = counterexample_href(cause.counterexample, report_path, html_dir) if cause.counterexample else None
    picture = _drawn(log.operations, log.found, explanation) if log is not None else None
    return Cause(number, cause, record, explanation, picture, picture.cited if picture else cite(explanation),
                 missing, href, cause.counterexample)


def _counterexample(counterexample: str | None, report_path: Path) -> tuple[RegressionLog | None, str | None]:
    """The counterexample's regression log, or why there is none to draw."""
    if counterexample is None:
        return None, "the failure has no counterexample file"
    path = counterexample_file(counterexample, report_path)
    if path is None:
        return None, f"{counterexample} is not found"
    try:
        return load_regression(path), None
    except (SpecError, OSError, ValueError) as exc:
        return None, f"{counterexample} cannot be read: {exc}"
