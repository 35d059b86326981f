"""What the `loomcheck` command prints: the conformance table, the failures by root cause with
their explanations, the exploration and coverage lines, and the progress bars."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from loomcheck.reports.model import InvariantRecord, Report

STYLE = {"pass": "green", "fail": "bold red", "not-applicable": "dim", "error": "yellow", "hazard": "magenta",
         "residual": "magenta", "not-reproduced": "magenta"}


def print_report(report: Report, console: Console, report_dir: Path) -> None:
    """The whole of a run as the terminal shows it, table first, totals last."""
    impl = report.implementation
    console.print(f"loomcheck {report.suiteVersion} · {impl.name} {impl.version} (EVENT_SCHEMA {impl.eventSchema}) "
                  f"· profile {report.profile}" + (f" · seed {report.seed}" if report.seed is not None else ""))
    table = Table(show_lines=False, header_style="bold")
    table.add_column("invariant", no_wrap=True)
    table.add_column("ADR", no_wrap=True)
    table.add_column("status")
    table.add_column("examples", justify="right")
    for record in report.results:
        table.add_row(record.id, f"{record.adr} {record.decision}", status_cell(record),
                      str(record.examples))
    console.print(table)
    for record in report.results:
        if record.status in ("hazard", "residual"):
            console.print(f"[magenta]{record.status}[/] {record.id} (documented, ADR {record.adr} {record.decision}): "
                          f"{escape(record.message or '')}")
    _print_failures(report, console)
    for finding in report.findings:
        console.print(f"[yellow]{finding.kind}[/]: {escape(finding.message)}")
        if finding.counterexample:
            console.print(f"    counterexample: {escape(finding.counterexample)}")
    print_exploration(report, console)
    print_coverage(report, console)
    for corpus in report.corpora:
        categories = ", ".join(f"{name} {count}" for name, count in corpus.perCategory.items())
        shown = f", {corpus.demonstrations} demonstrated" if corpus.demonstrations else ""
        console.print(f"corpus {corpus.name}: {corpus.cases} cases, {corpus.violations} violations{shown} "
                      f"({escape(categories)})")
    _print_totals(report, console, report_dir)


def _print_failures(report: Report, console: Console) -> None:
    """The failures by root cause, one counterexample each, then the errors."""
    spec = report.implementation.spec
    by_id = {record.id: record for record in report.results}
    if report.rootCauses:
        failed = sum(r.status == "fail" for r in report.results)
        console.print(f"[bold red]{_causes(len(report.rootCauses))}[/] of {failed} failing invariants "
                      f"(one counterexample each):")
    for number, cause in enumerate(report.rootCauses, start=1):
        print_failure(console, by_id[cause.head], spec, f"[bold red]{number}. fail[/]", cause.counterexample)
        if cause.alsoViolated:
            console.print(f"    also violated by this counterexample: {', '.join(cause.alsoViolated)}")
        if cause.sameCause:
            console.print(f"    the same cause (their own counterexamples also violate {cause.head}): "
                          f"{', '.join(cause.sameCause)}")
    for record in report.results:  # errors, and the failures of a report without root causes (an older one)
        if record.status == "error" or (record.status == "fail" and record.rootCause is None):
            print_failure(console, record, spec, f"[{STYLE[record.status]}]{record.status}[/]", record.counterexample)


def _print_totals(report: Report, console: Console, report_dir: Path) -> None:
    s = report.summary
    state = "" if report.complete else " · INCOMPLETE"
    hazards = f", {s.hazards} demonstrations (documented hazards and residuals)" if s.hazards else ""
    causes = f"{_causes(s.rootCauses)}: " if s.rootCauses else ""
    console.print(f"{causes}{s.passed} passed, {s.failed} failed, {s.notApplicable} not applicable, {s.errors} errors{hazards} "
                  f"in {report.wallSeconds:.1f}s ({report.stateMachineSteps} state-machine steps){state}")
    if s.profileDisagreements:
        counted = "counted (--profile-checks strict)" if report.profileChecks == "strict" else \
            "not counted in conformance or the exit status (--profile-checks strict counts them)"
        console.print(f"profile: {s.profileDisagreements} disagreement(s) with loomcheck's profile (spec/profiles.toml), "
                      f"{counted}")
    console.print(f"report: {escape(str(report_dir / 'report.json'))}, {escape(str(report_dir / 'junit.xml'))}, "
                  f"{escape(str(report_dir / 'summary.md'))}, {escape(str(report_dir / 'report.html'))}")


def _causes(count: int) -> str:
    return f"{count} root cause" + ("" if count == 1 else "s")


def print_failure(console: Console, record: InvariantRecord, impl: str, label: str, counterexample: str | None) -> None:
    if record.explanation is not None:
        print_explanation(console, label, record.explanation.text)
    else:
        console.print(f"{label} {record.id} (ADR {record.adr} {record.decision}): {escape(record.message or '')}")
    if record.examplesToFailure:
        console.print(f"    first seen in example {record.examplesToFailure}, then shrunk")
    if counterexample:
        size = f"{record.counterexampleOperations} operations, {record.counterexampleEvents} events"
        console.print(f"    counterexample ({size}): {escape(counterexample)}")
        console.print(f"    replay: loomcheck replay {escape(counterexample)} --impl {escape(impl)}")


def status_cell(record: InvariantRecord) -> str:
    cell = f"[{STYLE[record.status]}]{record.status}[/]"
    if record.disagrees:  # a choice the ADRs leave open, not a violation of one (spec/profiles.toml)
        return f"[yellow]profile[/] ({record.profile})"
    if record.manifest == "expected-failure":
        return f"[dim]{record.status} (expected)[/]"
    if record.manifest == "unexpected-pass":
        return f"{cell} [bold yellow](unexpected)[/]"
    if record.manifest == "still-failing-differently" and record.expected is not None:
        return f"{cell} (expected {record.expected.status})"
    return cell


def print_exploration(report: Report, console: Console) -> None:
    """The explorer's numbers, one row per scenario: how deep every history was checked."""
    if not report.exploration:
        return
    table = Table(title="bounded exhaustive exploration", header_style="bold", title_justify="left")
    for name, justify in (("scenario", "left"), ("depth", "right"), ("status", "left"), ("transitions", "right"),
                          ("distinct", "right"), ("replayed", "right"), ("seconds", "right"), ("per s", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in report.exploration:
        status = {"exhausted": "[green]exhausted[/] (every length)", "bounded": "[green]complete[/]",
                  "unknown": "[yellow]unknown beyond[/]", "failed": "[red]failed[/]"}[row.status]
        rate = f"{row.transitions / row.seconds:.0f}" if row.seconds else "-"
        table.add_row(row.scenario, f"{row.depthComplete}/{row.depthTarget}", status, str(row.transitions),
                      str(row.distinctStates), str(row.replayedOperations), f"{row.seconds:.1f}", rate)
    console.print(table)


def print_coverage(report: Report, console: Console) -> None:
    """One line per kind of coverage item: how many of the applicable ones some layer reached."""
    kinds: dict[str, list[int]] = {}
    for row in report.coverage:
        if row.applicable:
            counts = kinds.setdefault(row.kind, [0, 0])
            counts[0] += bool(row.reachedBy)
            counts[1] += 1
    if kinds:
        parts = [f"{kind}s {reached}/{total}" for kind, (reached, total) in kinds.items()]
        layers = sorted({layer for row in report.coverage for layer in row.reachedBy})
        console.print(f"coverage: {', '.join(parts)} reached (by {', '.join(layers)}; summary.md has the table)")


def print_explanation(console: Console, label: str, text: str) -> None:
    """An explanation (properties/explain.py) under its label, its lines after the first indented."""
    first, *rest = text.splitlines()
    console.print(f"{label} {escape(first)}")
    for line in rest:
        console.print(f"  {escape(line)}")


def progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True, disable=not console.is_terminal)
