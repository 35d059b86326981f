"""The `loomcheck` command.

    loomcheck run [--impl SPEC] [--profile ci|dev|campaign] [--only ID ...] [--report DIR] [--seed N]
    loomcheck replay FILE [--impl SPEC]
    loomcheck catalogue [--json]
    loomcheck fleet --count N --seed S --out DIR

Exit codes: 0 everything passed; 1 an invariant was violated; 2 the run was
incomplete or an implementation errored; 3 the suite could not run (bad
arguments, a broken spec file)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from loomcheck import __version__
from loomcheck.harness.loading import ImplementationSpecError, check_spec, resolve_factory
from loomcheck.harness.replay import replay
from loomcheck.harness.script import describe, from_model
from loomcheck.harness.session import ImplementationFailed, Session, hello_of
from loomcheck.reports.model import Report
from loomcheck.spec.catalogue import export_json, load_catalogue
from loomcheck.spec.errors import SpecError
from loomcheck.spec.regressions import load_regression

SUITE_FAILED = 3
STYLE = {"pass": "green", "fail": "bold red", "not-applicable": "dim", "error": "yellow", "hazard": "magenta",
         "residual": "magenta", "not-reproduced": "magenta"}


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 120))
    try:
        return int(args.command(args, console))
    except SpecError as exc:
        console.print(f"[bold red]spec error[/]: {escape(str(exc))}")
        return SUITE_FAILED
    except (ValueError, ImplementationSpecError) as exc:
        console.print(f"[bold red]error[/]: {escape(str(exc))}")
        return SUITE_FAILED
    except KeyboardInterrupt:
        console.print("interrupted")
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loomcheck", description="Conformance and model checking for Loom-semantics durable-execution kernels.")
    parser.add_argument("--version", action="version", version=f"loomcheck {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the catalogue against an implementation and print the conformance table")
    run.add_argument("--impl", default="reference", help="reference (default, SQLite), reference:memory, python:MODULE:FACTORY or python:FILE.py:FACTORY")
    run.add_argument("--profile", default="ci", help="ci (default: fixed seeds, bounded), dev, campaign")
    run.add_argument("--only", nargs="+", metavar="ID", help="invariant ids (or prefixes such as gate.) to run")
    run.add_argument("--report", type=Path, default=Path("loomcheck-report"), metavar="DIR", help="where report.json, junit.xml and counterexamples go (default: ./loomcheck-report)")
    run.add_argument("--seed", type=int, help="a seed for the state machine (instead of the profile's fixed derandomised one)")
    run.set_defaults(command=_run)

    rep = commands.add_parser("replay", help="re-run one regression log and show what differs")
    rep.add_argument("file", type=Path)
    rep.add_argument("--impl", default="reference")
    rep.add_argument("--record-expected", action="store_true",
                     help="maintainers: write this implementation's outcomes and logs into the file as its 'expect'")
    rep.set_defaults(command=_replay)

    cat = commands.add_parser("catalogue", help="list the invariants (or print the JSON export)")
    cat.add_argument("--json", action="store_true")
    cat.set_defaults(command=_catalogue)

    fleet = commands.add_parser("fleet", help="write a corpus of mixed-version fleet logs with their ADR 0104 D2 verdicts")
    # Taken as text and checked in _fleet, so a bad value exits 3 with a message (argparse would exit 2).
    fleet.add_argument("--count", metavar="N", help="how many generated cases (the fixed cases come on top)")
    fleet.add_argument("--seed", metavar="S", default="0", help="the seed (default 0): the same seed and count give the same file")
    fleet.add_argument("--out", metavar="DIR", help="the directory corpus.json is written to")
    fleet.set_defaults(command=_fleet)
    return parser


# -- run -----------------------------------------------------------------------------
def _run(args: argparse.Namespace, console: Console) -> int:
    from loomcheck.harness.runner import Run

    catalogue = load_catalogue()
    check_spec(args.impl)
    with _progress(console) as progress:
        tasks: dict[str, int] = {}

        def report_progress(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=total)
            progress.update(tasks[phase], completed=done, total=total)

        run = Run(args.impl, catalogue, profile=args.profile, only=args.only, report_dir=args.report,
                  seed=args.seed, progress=report_progress)
        report = run.execute()
    _print_report(report, console, args)
    return report.exit_code()


def _progress(console: Console) -> Progress:
    return Progress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True, disable=not console.is_terminal)


def _print_report(report: Report, console: Console, args: argparse.Namespace) -> None:
    impl = report.implementation
    console.print(f"loomcheck {report.suiteVersion} · {impl.name} {impl.version} (EVENT_SCHEMA {impl.eventSchema}) "
                  f"· profile {report.profile}" + (f" · seed {report.seed}" if report.seed is not None else ""))
    table = Table(show_lines=False, header_style="bold")
    table.add_column("invariant", no_wrap=True)
    table.add_column("ADR", no_wrap=True)
    table.add_column("status")
    table.add_column("examples", justify="right")
    for record in report.results:
        table.add_row(record.id, f"{record.adr} {record.decision}", f"[{STYLE[record.status]}]{record.status}[/]",
                      str(record.examples))
    console.print(table)
    for record in report.results:
        if record.status in ("hazard", "residual"):
            console.print(f"[magenta]{record.status}[/] {record.id} (documented, ADR {record.adr} {record.decision}): "
                          f"{escape(record.message or '')}")
        if record.status in ("fail", "error"):
            console.print(f"[{STYLE[record.status]}]{record.status}[/] {record.id} (ADR {record.adr} {record.decision}): "
                          f"{escape(record.message or '')}")
            if record.examplesToFailure:
                console.print(f"    first seen in example {record.examplesToFailure}, then shrunk")
            if record.counterexample:
                size = f"{record.counterexampleOperations} operations, {record.counterexampleEvents} events"
                console.print(f"    counterexample ({size}): {escape(record.counterexample)}")
                console.print(f"    replay: loomcheck replay {escape(record.counterexample)} --impl {escape(impl.spec)}")
    for finding in report.findings:
        console.print(f"[yellow]{finding.kind}[/]: {escape(finding.message)}")
        if finding.counterexample:
            console.print(f"    counterexample: {escape(finding.counterexample)}")
    for corpus in report.corpora:
        categories = ", ".join(f"{name} {count}" for name, count in corpus.perCategory.items())
        shown = f", {corpus.demonstrations} demonstrated" if corpus.demonstrations else ""
        console.print(f"corpus {corpus.name}: {corpus.cases} cases, {corpus.violations} violations{shown} "
                      f"({escape(categories)})")
    s = report.summary
    state = "" if report.complete else " · INCOMPLETE"
    hazards = f", {s.hazards} demonstrations (documented hazards and residuals)" if s.hazards else ""
    console.print(f"{s.passed} passed, {s.failed} failed, {s.notApplicable} not applicable, {s.errors} errors{hazards} "
                  f"in {report.wallSeconds:.1f}s ({report.stateMachineSteps} state-machine steps){state}")
    console.print(f"report: {escape(str(args.report / 'report.json'))}, {escape(str(args.report / 'junit.xml'))}")


# -- replay --------------------------------------------------------------------------
def _replay(args: argparse.Namespace, console: Console) -> int:
    log = load_regression(args.file)
    driver = resolve_factory(args.impl)()
    try:
        hello = hello_of(driver)
        session = Session(driver, frozenset(hello.features))
        result = replay(session, log)
    except ImplementationFailed as failed:
        console.print(f"[yellow]implementation-error[/]: {escape(str(failed))}")
        return 2
    finally:
        driver.close()
    console.print(f"replay {escape(log.name)} (ADR {log.adr}; {', '.join(log.invariants)}) against {hello.name} {hello.version}")
    for number, (model, outcome) in enumerate(zip(log.operations, result.outcomes), start=1):
        console.print(f"  {number:>2}. {escape(describe(from_model(model)))} -> {outcome}")
    if result.failure is not None:
        console.print(f"[yellow]implementation-error[/]: {escape(str(result.failure))}")
        return 2
    for execution, events in result.logs.items():
        console.print(f"  log {escape(execution)}:")
        for event in events:
            console.print(f"    #{event['seq']} {escape(str(event['type']))} {escape(_short(event['payload']))}")
    if args.record_expected and result.failure is None:
        from loomcheck.harness.replay import expectation_of
        from loomcheck.spec.regressions import dump_regression

        log = log.model_copy(update={"expect": expectation_of(result)})
        args.file.write_text(dump_regression(log), encoding="utf-8")
        console.print(f"recorded the expected outcome into {escape(str(args.file))}")
        result.differences = []
    if log.found is not None:
        console.print(f"  originally found against {escape(log.found.implementation)}: {escape(log.found.message)}")
    catalogue = load_catalogue()
    named = set(log.invariants)
    hazards = {inv.id for inv in catalogue.invariants if inv.kind == "documented-hazard"}
    failing = [v for v in result.violations if v.invariant in named and v.invariant not in hazards]
    for violation in result.violations:
        if violation.invariant in hazards:
            console.print(f"[magenta]hazard demonstrated[/] {violation.invariant}: {escape(violation.message)}")
        elif violation.invariant in named:
            console.print(f"[bold red]violated[/] {violation.invariant}: {escape(violation.message)}")
        else:
            console.print(f"[yellow]also violated[/] {violation.invariant} (not named by this log): {escape(violation.message)}")
    for difference in result.differences:
        console.print(f"[bold red]differs[/] from the expected outcome: {escape(difference)}")
    if failing or result.differences:
        return 1
    console.print("[green]no invariant this log names was violated, and every outcome was as expected[/]" if log.expect
                  else "[green]no invariant this log names was violated[/] (the log records no expected outcome)")
    return 0


def _short(value: object) -> str:
    from loomcheck.properties.jsonvalues import show

    return show(value, 100)


# -- catalogue -----------------------------------------------------------------------
def _catalogue(args: argparse.Namespace, console: Console) -> int:
    catalogue = load_catalogue()
    if args.json:
        sys.stdout.write(export_json(catalogue))
        return 0
    for inv in catalogue.invariants:
        console.print(f"[bold]{inv.id}[/] (ADR {inv.adr} {inv.decision}, from {inv.since}; checks: {', '.join(inv.checks)})")
        console.print(f"    {escape(inv.statement)}")
    return 0


# -- fleet ---------------------------------------------------------------------------
def _fleet(args: argparse.Namespace, console: Console) -> int:
    import time
    from collections import Counter

    from loomcheck.fleet.corpus import dump
    from loomcheck.fleet.generate import generate

    count = _whole_number("--count", args.count, minimum=0)
    seed = _whole_number("--seed", args.seed)
    if not args.out:
        raise ValueError("--out DIR is required: the directory corpus.json is written to")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} exists and is not a directory")
    began = time.perf_counter()
    with _progress(console) as progress:
        task = progress.add_task("fleet", total=count)
        corpus = generate(count, seed, progress=lambda done: progress.update(task, completed=done))
    seconds = time.perf_counter() - began
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "corpus.json").write_text(dump(corpus), encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot write {out / 'corpus.json'}: {exc.strerror or exc}") from None
    kinds = Counter(case.kind for case in corpus.cases)
    outcomes = Counter(case.expected.outcome for case in corpus.cases)
    console.print(f"wrote {escape(str(out / 'corpus.json'))}: {len(corpus.cases)} cases "
                  f"({', '.join(f'{kind} {n}' for kind, n in sorted(kinds.items()))}; "
                  f"{', '.join(f'{o} {n}' for o, n in sorted(outcomes.items()))})")
    console.print(f"generated in {seconds:.2f}s: {len(corpus.cases) / seconds if seconds else 0:.0f} cases per second")
    return 0


def _whole_number(flag: str, text: str | None, minimum: int | None = None) -> int:
    if text is None:
        raise ValueError(f"{flag} is required")
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{flag} must be a whole number, not {text!r}") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"{flag} must be at least {minimum}, not {value}")
    return value


if __name__ == "__main__":
    raise SystemExit(main())
