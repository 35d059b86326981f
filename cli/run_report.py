"""What `loomcheck run` prints once the run is over, at three verbosities (docs/cli.md#what-it-prints):
the verdict first in one line and last in full; by default the counts per ADR, the failures by root
cause with their explanations, and a line each for the demonstrations, exploration, coverage,
corpora and the report's files; `-v` adds the per-invariant table, what each demonstration showed,
the exploration table and each corpus; `-q` keeps only the failures and the verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.markup import escape

from loomcheck.cli.console import DEMONSTRATED, NORMAL, QUIET, STYLE, VERBOSE, print_failure
from loomcheck.cli.tables import adr_table, exploration_table, invariant_table
from loomcheck.reports.model import Report
from loomcheck.run.printed_commands import repro_command


def print_report(report: Report, console: Console, report_dir: Path, verbosity: int = NORMAL, strict: bool = False,
                 notes: Sequence[str] = ()) -> None:
    """The run as the terminal shows it; `notes` (the manifest's) come just before the verdict."""
    if verbosity > QUIET:
        console.print(f"{verdict(report, strict, short=True)} · {_who(report)}", soft_wrap=True)
    if verbosity >= VERBOSE:
        impl = report.implementation
        console.print(f"{escape(impl.name)} {escape(impl.version)} · EVENT_SCHEMA {impl.eventSchema} · {impl.transport} · "
                      f"loomcheck {report.suiteVersion} · {report.stateMachineSteps} state-machine steps")
        console.print(invariant_table(report))
    if verbosity > QUIET:
        console.print(adr_table(report))
        _print_demonstrations(report, console, verbosity)
    _print_failures(report, console, verbosity)
    for finding in report.findings:
        console.print(f"[yellow]{finding.kind}[/]: {escape(finding.message)}")
        if finding.counterexample:
            console.print(f"    counterexample: {escape(finding.counterexample)}", soft_wrap=True)
    if verbosity > QUIET:
        _print_exploration(report, console, verbosity)
        _print_coverage(report, console)
        _print_corpora(report, console, verbosity)
        _print_profile(report, console)
    for note in notes:
        console.print(note)
    if verbosity > QUIET:
        files = ", ".join(escape(str(report_dir / name)) for name in ("report.json", "summary.md", "report.html",
                                                                        "junit.xml"))
        console.print(f"report: {files}", soft_wrap=True)
    console.print(verdict(report, strict), soft_wrap=True)


def _who(report: Report) -> str:
    impl = report.implementation
    return (f"{escape(impl.name)} · profile {report.profile}"  # its version: -v
            + (f" · seed {report.seed}" if report.seed is not None else ""))


def verdict(report: Report, strict: bool = False, short: bool = False) -> str:
    """PASSED, FAILED, INCOMPLETE or ERRORS, as the exit status says, with the counts (`short`: the
    few that matter) and, in full, the time and why a partial run stopped."""
    code = report.exit_code(strict=strict)
    word = {0: "[bold green]PASSED[/]", 1: "[bold red]FAILED[/]"}.get(
        code, "[bold yellow]INCOMPLETE[/]" if not report.complete else "[bold yellow]ERRORS[/]")
    s = report.summary
    causes = f"{_causes(s.rootCauses)}: " if s.rootCauses else ""
    errors = f", {s.errors} errors" if s.errors else ""
    if short:
        return f"{word}: {causes}{s.passed} passed, {s.failed} failed{errors}"
    # As pytest's last line: the counts that are not zero (passed and failed always).
    others = "".join(f", {count} {what}" for count, what in ((s.notApplicable, "not applicable"),
                                                              (s.hazards, "demonstrated")) if count)
    stopped = "" if report.complete else f" · stopped: {escape(report.stopped or 'before its end')}"
    return f"{word}: {causes}{s.passed} passed, {s.failed} failed{errors}{others} in {report.wallSeconds:.1f}s{stopped}"


def _causes(count: int) -> str:
    return f"{count} root cause" + ("" if count == 1 else "s")


def _print_demonstrations(report: Report, console: Console, verbosity: int) -> None:
    """Documented hazards and residuals: demonstrated, never passed; -v says what each showed."""
    shown = [r for r in report.results if r.status in DEMONSTRATED]
    if verbosity >= VERBOSE:
        for record in shown:
            if record.status != "not-reproduced":
                console.print(f"[magenta]{record.status}[/] {record.id} (documented, ADR {record.adr} "
                              f"{record.decision}): {escape(record.message or '')}")
        return
    seen = [r.id for r in shown if r.status != "not-reproduced"]
    missed = [r.id for r in shown if r.status == "not-reproduced"]
    if seen or missed:
        parts = ([f"shown: {', '.join(seen)}"] if seen else []) + ([f"not reproduced: {', '.join(missed)}"] if missed else [])
        console.print(f"demonstrated, never passed (documented hazards and residuals; -v: what each showed): "
                      f"{'; '.join(parts)}")


def _print_failures(report: Report, console: Console, verbosity: int) -> None:
    """The failures by root cause, one counterexample each with its explanation (at every
    verbosity), then the errors; a failure the manifest expects is a line unless -v."""
    spec = report.implementation.spec
    by_id = {record.id: record for record in report.results}
    if report.rootCauses:
        failed = sum(r.status == "fail" for r in report.results)
        plural = "" if failed == 1 else "s"
        console.print(f"[bold red]{_causes(len(report.rootCauses))}[/] of {failed} failing invariant{plural} "
                      f"(one counterexample each):")
    for number, cause in enumerate(report.rootCauses, start=1):
        record = by_id[cause.head]
        if record.excused and verbosity < VERBOSE:
            reason = record.expected.reason if record.expected is not None else ""
            console.print(f"{number}. [dim]fail (expected by the manifest)[/] {cause.head}: {escape(reason)}")
            continue
        print_failure(console, record, spec, f"[bold red]{number}. fail[/]", cause.counterexample)
        if cause.alsoViolated:
            console.print(f"    also violated by this counterexample: {', '.join(cause.alsoViolated)}")
        if cause.sameCause:
            console.print(f"    the same cause (their own counterexamples also violate {cause.head}): "
                          f"{', '.join(cause.sameCause)}")
    for record in report.results:  # errors, and the failures of a report without root causes (an older one)
        if record.status == "error" or (record.status == "fail" and record.rootCause is None):
            print_failure(console, record, spec, f"[{STYLE[record.status]}]{record.status}[/]", record.counterexample)
    first = next((c.counterexample for c in report.rootCauses if c.counterexample), None)
    if first is not None and verbosity > QUIET:
        console.print(f"a reproducer for the kernel's maintainers, of any counterexample above: "
                      f"{escape(repro_command(first, spec))}", soft_wrap=True)


def _print_exploration(report: Report, console: Console, verbosity: int) -> None:
    """The bounded exhaustive explorer: a table with -v, else one line."""
    rows = report.exploration
    if not rows:
        return
    if verbosity >= VERBOSE:
        console.print(exploration_table(report))
        return
    counts = {status: sum(r.status == status for r in rows) for status in ("exhausted", "bounded", "unknown", "failed")}
    parts = [f"{counts['exhausted']} exhausted (every length)" if counts["exhausted"] else "",
             f"{counts['bounded']} complete to their depth" if counts["bounded"] else "",
             f"[yellow]{counts['unknown']} unknown beyond the depth reached[/]" if counts["unknown"] else "",
             f"[red]{counts['failed']} failed[/]" if counts["failed"] else ""]
    depth = max(r.depthTarget for r in rows)
    console.print(f"exploration: {len(rows)} scenarios to depth {depth}: {', '.join(p for p in parts if p)}; "
                  f"{sum(r.transitions for r in rows)} transitions in {sum(r.seconds for r in rows):.1f}s (-v: the table)")


def _print_coverage(report: Report, console: Console) -> None:
    """One line: how many of the applicable coverage items of each kind some layer reached."""
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


def _print_corpora(report: Report, console: Console, verbosity: int) -> None:
    """The fixed corpora: a line each with -v, else one line for them all."""
    if not report.corpora:
        return
    if verbosity >= VERBOSE:
        for corpus in report.corpora:
            categories = ", ".join(f"{name} {count}" for name, count in corpus.perCategory.items())
            shown = f", {corpus.demonstrations} demonstrated" if corpus.demonstrations else ""
            console.print(f"corpus {corpus.name}: {corpus.cases} cases, {corpus.violations} violations{shown} "
                          f"({escape(categories)})")
        return
    violated = [f"{c.name} {c.violations}" for c in report.corpora if c.violations]
    shown = sum(c.demonstrations for c in report.corpora)
    console.print(f"corpora: {len(report.corpora)} run, {sum(c.cases for c in report.corpora)} cases, "
                  f"{sum(c.violations for c in report.corpora)} violations"
                  + (f" ({', '.join(violated)})" if violated else "")
                  + (f", {shown} demonstrated" if shown else "") + " (-v: each corpus)")


def _print_profile(report: Report, console: Console) -> None:
    disagreements = report.summary.profileDisagreements
    if disagreements:
        counted = "counted (--profile-checks strict)" if report.profileChecks == "strict" else \
            "not counted in conformance or the exit status (--profile-checks strict counts them)"
        console.print(f"profile: {disagreements} disagreement(s) with loomcheck's profile (spec/profiles.toml), "
                      f"{counted}")
