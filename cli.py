"""The `loomcheck` command.

    loomcheck run [--impl SPEC] [--profile ci|dev|campaign|peers-slow] [--only ID ...] [--report DIR] [--seed N]
                  [--manifest FILE] [--write-manifest FILE] [--strict-manifest]
                  [--database DIR|redis://HOST:PORT/DB|none]
    loomcheck replay FILE [--impl SPEC]
    loomcheck repro FILE [--impl SPEC] [--out DIR]
    loomcheck promote REPORT_DIR|COUNTEREXAMPLE.json ... [--to DIR] [--name NAME]
    loomcheck catalogue [--json]
    loomcheck fleet --count N --seed S --out DIR
    loomcheck docs [--report REPORT.json ...] [--out FILE]
    loomcheck diff BASE.json CANDIDATE.json
    loomcheck matrix REPORT.json ... [--out FILE.html]

Exit codes: 0 everything passed; 1 an invariant was violated; 2 the run was
incomplete, an implementation errored, or the outcome is unknown; 3 the suite
itself failed (bad arguments, a broken spec or manifest file). With --manifest,
a failure or error the manifest expects counts as neither, and a pass it does
not expect is listed (exit 1 only with --strict-manifest). `diff` exits 1 when
the candidate fails an invariant the base did not, else 2 when the candidate is
partial or unreadable, else 0."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from loomcheck import __version__
from loomcheck.peers import peer_manifest
from loomcheck.contract import interrupts
from loomcheck.run.loading import ImplementationSpecError, check_spec, resolve_factory
from loomcheck.run.replay import replay
from loomcheck.contract.script import describe, from_model
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, hello_of
from loomcheck.run.manifest import Manifest
from loomcheck.reports.model import InvariantRecord, Report
from loomcheck.spec.catalogue import export_json, load_catalogue
from loomcheck.spec.errors import SpecError
from loomcheck.spec.regressions import load_regression

if TYPE_CHECKING:
    from loomcheck.run.runner import Run
    from loomcheck.reports.placeholder import Placeholder

SUITE_FAILED = 3
STYLE = {"pass": "green", "fail": "bold red", "not-applicable": "dim", "error": "yellow", "hazard": "magenta",
         "residual": "magenta", "not-reproduced": "magenta"}


def main(argv: list[str] | None = None, placeholder: Placeholder | None = None) -> int:
    """`placeholder`: the report `python -m loomcheck run` wrote before this module was imported
    (loomcheck/__main__.py); without one, `run` writes its own as soon as the command line is read."""
    ours = interrupts.install()  # a run stops by flag (contract/interrupts.py); __main__ installed them earlier
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit:  # argparse's own message and status; a placeholder for a run that never was goes
            if placeholder is not None:
                placeholder.withdraw()
            raise
        args.placeholder = _placeholder_for(args, placeholder) if args.command is _run else None
        return _main(args)
    finally:
        if ours:
            interrupts.restore()


def _placeholder_for(args: argparse.Namespace, early: Placeholder | None) -> Placeholder | None:
    from loomcheck.reports.placeholder import begin

    if early is not None and early.matches(args.report, args.impl, args.profile):
        return early
    if early is not None:  # the full parser put the report elsewhere (an abbreviated option, say)
        early.withdraw()
    return begin(args.report, args.impl, args.profile)


def _main(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):  # a hostile name (a lone surrogate) is printed escaped, never a traceback
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(console.width, 120))
    try:
        if args.command is not _run:
            _ordinary_signals()
        return int(args.command(args, console))
    except SpecError as exc:
        console.print(f"[bold red]spec error[/]: {escape(str(exc))}", soft_wrap=True)  # one line, whatever the width
        return SUITE_FAILED
    except (ValueError, ImplementationSpecError) as exc:
        console.print(f"[bold red]error[/]: {escape(str(exc))}", soft_wrap=True)
        return SUITE_FAILED
    except KeyboardInterrupt:
        console.print("interrupted")
        return 2


def _ordinary_signals() -> None:
    """Commands other than run stop at once on Ctrl-C, as any program does; a signal the
    flag already holds (received while loomcheck was starting) stops them now."""
    interrupts.restore()
    if interrupts.requested() is not None:
        interrupts.clear()
        raise KeyboardInterrupt


def _checkpoint() -> None:
    """Before the run begins: the user's signal, held by flag, stops it here."""
    if interrupts.requested() is not None:
        raise KeyboardInterrupt


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loomcheck", description="Conformance and model checking for Loom-semantics durable-execution kernels.")
    parser.add_argument("--version", action="version", version=f"loomcheck {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the catalogue against an implementation and print the conformance table")
    run.add_argument("--impl", default="reference", help="reference (default, SQLite, synchronous=FULL), reference:sqlite:normal (synchronous=NORMAL: survives a process crash, not a power loss; docs/stores.md), reference:memory, python:MODULE:FACTORY, python:FILE.py:FACTORY or stdio:COMMAND (docs/protocol.md)")
    run.add_argument("--profile", default="ci", help="ci (default: fixed seeds, bounded), dev, campaign, peers-slow (a slow peer: 10 examples of 8 steps)")
    run.add_argument("--profile-checks", choices=("advisory", "strict"), default="advisory",
                     help="checks resting on a choice the ADRs leave open (spec/profiles.toml): advisory (default) "
                          "reports a disagreement apart from conformance, never in the exit status; strict counts it")
    run.add_argument("--only", nargs="+", metavar="ID", help="invariant ids (or prefixes such as gate.) to run")
    run.add_argument("--report", type=Path, default=Path("loomcheck-report"), metavar="DIR", help="where report.json, junit.xml and counterexamples go (default: ./loomcheck-report)")
    run.add_argument("--seed", type=int, help="a seed for the state machine (instead of the profile's fixed derandomised one; "
                     "a randomised profile without it draws one and records it in report.json)")
    run.add_argument("--database", metavar="DIR|URL|none", help="the Hypothesis example database failing examples are kept "
                     "in and replayed from: a directory, redis://host:port/db (pip install 'loomcheck[campaign]') or none "
                     "(default: .loomcheck/examples for the campaign profile, none for the others; docs/campaigns.md)")
    run.add_argument("--explore-depth", type=int, metavar="N", help="the explorer's bound: every history of N operations "
                     "per scenario (default: the profile's, 8 for ci, 14 for campaign; 0 skips it)")
    run.add_argument("--explore-budget", type=float, metavar="S", help="seconds the explorer may take in all (default: "
                     "the profile's); what it does not finish is reported unknown")
    _transport_arguments(run)
    _manifest_arguments(run)
    run.set_defaults(command=_run)

    serve = commands.add_parser("serve", help="serve a Python kernel (the reference by default) over the driver protocol on stdin/stdout")
    serve.add_argument("--impl", default="reference", help="reference (default: SQLite, durable under $LOOMCHECK_STORE_DIR, synchronous=FULL), reference:sqlite:normal (synchronous=NORMAL), reference:memory or python:MODULE:FACTORY")
    serve.set_defaults(command=_serve)

    rep = commands.add_parser("replay", help="re-run one regression log and show what differs")
    rep.add_argument("file", type=Path)
    rep.add_argument("--impl", default="reference")
    rep.add_argument("--record-expected", action="store_true",
                     help="maintainers: write this implementation's outcomes and logs into the file as its 'expect'")
    rep.set_defaults(command=_replay)

    repro = commands.add_parser("repro", help="write a standalone reproducer of a counterexample for the implementation's "
                                              "maintainers: repro.py in process, or the exact stdio exchange and repro.sh")
    repro.add_argument("file", type=Path)
    repro.add_argument("--impl", default="reference")
    repro.add_argument("--out", type=Path, metavar="DIR", help="where to write it (default: FILE's name + '.repro/')")
    repro.set_defaults(command=_repro)

    promote = commands.add_parser("promote", help="copy a run's counterexamples into the committed regression logs")
    promote.add_argument("sources", nargs="*", type=Path, metavar="REPORT_DIR|COUNTEREXAMPLE.json",
                         help="a report folder (its counterexamples/) or counterexample files")
    promote.add_argument("--to", type=Path, metavar="DIR",
                         help="the folder of committed logs (default: spec/regressions/ of this source checkout)")
    promote.add_argument("--name", metavar="NAME", help="the promoted log's name, for one counterexample "
                         "(default: ADR-invariant, say 0057-gate-i-receives-entry-i)")
    promote.set_defaults(command=_promote)

    cat = commands.add_parser("catalogue", help="list the invariants (or print the JSON export)")
    cat.add_argument("--json", action="store_true")
    cat.set_defaults(command=_catalogue)

    fleet = commands.add_parser("fleet", help="write a corpus of mixed-version fleet logs with their ADR 0104 D2 verdicts")
    # Taken as text and checked in _fleet, so a bad value exits 3 with a message (argparse would exit 2).
    fleet.add_argument("--count", metavar="N", help="how many generated cases (the fixed cases come on top)")
    fleet.add_argument("--seed", metavar="S", default="0", help="the seed (default 0): the same seed and count give the same file")
    fleet.add_argument("--out", metavar="DIR", help="the directory corpus.json is written to")
    fleet.set_defaults(command=_fleet)

    docs = commands.add_parser("docs", help="render the catalogue as Markdown, with each invariant's status in the reports given")
    docs.add_argument("--report", type=Path, nargs="+", action="extend", default=[], metavar="REPORT.json",
                      help="a report.json whose statuses to show (repeatable)")
    docs.add_argument("--out", type=Path, metavar="FILE", help="write here (default: stdout)")
    docs.set_defaults(command=_docs)

    # Positionals are optional to argparse and checked in the command, so a missing one exits 3 with a message.
    dif = commands.add_parser("diff", help="compare two report.json files: newly failing, fixed, still failing, changed")
    dif.add_argument("base", nargs="?", type=Path, metavar="BASE.json")
    dif.add_argument("candidate", nargs="?", type=Path, metavar="CANDIDATE.json")
    dif.set_defaults(command=_diff)

    matrix = commands.add_parser("matrix", help="write the HTML conformance matrix of several report.json files")
    matrix.add_argument("reports", nargs="*", type=Path, metavar="REPORT.json")
    matrix.add_argument("--out", type=Path, default=Path("matrix.html"), metavar="FILE", help="default: ./matrix.html")
    matrix.set_defaults(command=_matrix)
    return parser


# -- run -----------------------------------------------------------------------------
def _run(args: argparse.Namespace, console: Console) -> int:
    early: Placeholder | None = args.placeholder
    try:
        run, manifest, progress = _prepare(args, console)
    except BaseException:  # refused before it began (exit 3): nothing left behind; or interrupted: said so
        if early is not None and interrupts.requested() is not None:
            early.interrupted()
        elif early is not None:
            early.withdraw()
        raise
    with progress:  # from here the run writes its own report, however it ends
        report = run.execute()
    if interrupts.requested() is not None:  # after the run's last check: its report stands, the caller is told
        raise KeyboardInterrupt
    if run.load_failure is not None:  # the factory raised: a tool error, not 80 invariants in error
        console.print(f"[bold red]error[/]: {escape(run.load_failure)}")
        return SUITE_FAILED
    if manifest is not None:
        _apply_manifest(report, manifest, args.report)
    _print_report(report, console, args)
    _manifest_notes(report, console, args, manifest)
    return report.exit_code(strict=args.strict_manifest)


def _prepare(args: argparse.Namespace, console: Console) -> tuple[Run, Manifest | None, Progress]:
    """Every input checked (a bad one: exit 3, the run never starts) and the run made; the
    user's signal, held by flag, is looked at after each slow step."""
    from loomcheck.fuzz.campaign import open_database, parse_database
    from loomcheck.run.runner import Run

    _checkpoint()
    catalogue = load_catalogue()
    check_spec(args.impl)
    _checkpoint()
    resolve_factory(args.impl)  # a missing module, file or factory: one line, exit 3 (the run never starts)
    _checkpoint()
    choice = parse_database(args.database, args.profile)
    database = open_database(choice)  # a bad URL or an unreachable server stops here, exit 3
    if database is not None:
        console.print(f"example database: {escape(choice.describe())}")
    manifest = _load_manifest(args)
    _check_writable(args.report)  # after every input is known good: a refused run leaves no directory behind
    shipped = peer_manifest(args.impl) if args.manifest is None else None
    if shipped is not None:
        console.print(f"manifest: the {args.impl} adapter's own ({escape(str(shipped))}); --manifest FILE uses another")
    progress = _progress(console)
    tasks: dict[str, int] = {}

    def report_progress(phase: str, done: int, total: int) -> None:
        if phase not in tasks:
            tasks[phase] = progress.add_task(phase, total=total)
        progress.update(tasks[phase], completed=done, total=total)

    run = Run(args.impl, catalogue, profile=args.profile, only=args.only, report_dir=args.report,
              seed=args.seed, progress=report_progress, transport=_transport_options(args), manifest=manifest,
              explore_depth=args.explore_depth, explore_seconds=args.explore_budget, database=database,
              profile_checks=args.profile_checks)
    if args.seed is None and run.seed is not None:  # drawn for this run: shown now, in case it never ends
        console.print(f"seed {run.seed} (drawn; --seed {run.seed} draws the same examples)")
    _checkpoint()
    return run, manifest, progress


def _check_writable(report_dir: Path) -> None:
    """The report directory must take files before a run spends minutes on a kernel."""
    import tempfile

    try:
        report_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=report_dir):
            pass
    except OSError as exc:
        raise ValueError(f"--report {report_dir}: cannot write there: {exc.strerror or exc}") from None


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
        table.add_row(record.id, f"{record.adr} {record.decision}", _status_cell(record),
                      str(record.examples))
    console.print(table)
    for record in report.results:
        if record.status in ("hazard", "residual"):
            console.print(f"[magenta]{record.status}[/] {record.id} (documented, ADR {record.adr} {record.decision}): "
                          f"{escape(record.message or '')}")
    by_id = {record.id: record for record in report.results}
    if report.rootCauses:
        failed = sum(r.status == "fail" for r in report.results)
        console.print(f"[bold red]{_causes(len(report.rootCauses))}[/] of {failed} failing invariants "
                      f"(one counterexample each):")
    for number, cause in enumerate(report.rootCauses, start=1):
        _print_failure(console, by_id[cause.head], impl.spec, f"[bold red]{number}. fail[/]", cause.counterexample)
        if cause.alsoViolated:
            console.print(f"    also violated by this counterexample: {', '.join(cause.alsoViolated)}")
        if cause.sameCause:
            console.print(f"    the same cause (their own counterexamples also violate {cause.head}): "
                          f"{', '.join(cause.sameCause)}")
    for record in report.results:  # errors, and the failures of a report without root causes (an older one)
        if record.status == "error" or (record.status == "fail" and record.rootCause is None):
            _print_failure(console, record, impl.spec, f"[{STYLE[record.status]}]{record.status}[/]", record.counterexample)
    for finding in report.findings:
        console.print(f"[yellow]{finding.kind}[/]: {escape(finding.message)}")
        if finding.counterexample:
            console.print(f"    counterexample: {escape(finding.counterexample)}")
    _print_exploration(report, console)
    _print_coverage(report, console)
    for corpus in report.corpora:
        categories = ", ".join(f"{name} {count}" for name, count in corpus.perCategory.items())
        shown = f", {corpus.demonstrations} demonstrated" if corpus.demonstrations else ""
        console.print(f"corpus {corpus.name}: {corpus.cases} cases, {corpus.violations} violations{shown} "
                      f"({escape(categories)})")
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
    console.print(f"report: {escape(str(args.report / 'report.json'))}, {escape(str(args.report / 'junit.xml'))}, "
                  f"{escape(str(args.report / 'summary.md'))}, {escape(str(args.report / 'report.html'))}")


def _causes(count: int) -> str:
    return f"{count} root cause" + ("" if count == 1 else "s")


def _print_failure(console: Console, record: InvariantRecord, impl: str, label: str, counterexample: str | None) -> None:
    if record.explanation is not None:
        _print_explanation(console, label, record.explanation.text)
    else:
        console.print(f"{label} {record.id} (ADR {record.adr} {record.decision}): {escape(record.message or '')}")
    if record.examplesToFailure:
        console.print(f"    first seen in example {record.examplesToFailure}, then shrunk")
    if counterexample:
        size = f"{record.counterexampleOperations} operations, {record.counterexampleEvents} events"
        console.print(f"    counterexample ({size}): {escape(counterexample)}")
        console.print(f"    replay: loomcheck replay {escape(counterexample)} --impl {escape(impl)}")


def _print_coverage(report: Report, console: Console) -> None:
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


def _print_exploration(report: Report, console: Console) -> None:
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


def _transport_arguments(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("stdio implementations (docs/protocol.md)")
    group.add_argument("--timeout", type=float, default=30.0, metavar="S", help="seconds one answer may take (default 30)")
    group.add_argument("--deadline", type=float, metavar="S", help="seconds the whole run may take; then it stops with a partial report")
    group.add_argument("--restarts", type=int, default=3, metavar="N", help="new processes after faults, per run (default 3)")
    group.add_argument("--max-line", type=int, default=64 * 1024 * 1024, metavar="BYTES", help="the longest line accepted (default 64 MiB)")
    group.add_argument("--validate-protocol", action="store_true", help="check every message, both ways, against spec/schemas/protocol/")


def _transport_options(args: argparse.Namespace) -> "TransportOptions":
    import time

    from loomcheck.run.loading import TransportOptions

    if args.timeout <= 0 or args.restarts < 0 or args.max_line < 1024 or (args.deadline is not None and args.deadline <= 0):
        raise ValueError("--timeout and --deadline must be positive, --restarts at least 0, --max-line at least 1024")
    deadline = time.monotonic() + args.deadline if args.deadline is not None else None
    return TransportOptions(timeout=args.timeout, max_line=args.max_line, restarts=args.restarts,
                            validate=args.validate_protocol, deadline=deadline)


# -- serve ---------------------------------------------------------------------------
def _serve(args: argparse.Namespace, console: Console) -> int:
    """stdout carries the protocol only: everything else goes to stderr."""
    from loomcheck.protocol.server import serve

    if args.impl.startswith("stdio:"):
        raise ValueError("serve takes a Python kernel: reference, reference:memory or python:MODULE:FACTORY")
    driver = resolve_factory(args.impl)()
    try:
        return serve(driver)
    finally:
        driver.close()


# -- replay --------------------------------------------------------------------------
def _print_explanation(console: Console, label: str, text: str) -> None:
    """An explanation (properties/explain.py) under its label, its lines after the first indented."""
    first, *rest = text.splitlines()
    console.print(f"{label} {escape(first)}")
    for line in rest:
        console.print(f"  {escape(line)}")


def _repro(args: argparse.Namespace, console: Console) -> int:
    from loomcheck.run.repro import ReproError, write_repro

    log = load_regression(args.file)
    out = args.out or args.file.with_name(args.file.stem + ".repro")
    try:
        written = write_repro(log, args.impl, out)
    except ReproError as exc:
        console.print(f"[yellow]cannot write a reproducer[/]: {escape(str(exc))}")
        return 2
    for path in written:
        console.print(f"wrote {escape(str(path))}")
    run = f"sh {written[0]}" if written[0].suffix == ".sh" else f"python {written[0]}"
    console.print(f"run it: {escape(run)}  (exit 1 while it reproduces)")
    return 0


def _made(impl: str) -> object:
    """The factory's driver; whatever the factory raises (SystemExit too) is a one-line tool error, exit 3."""
    from loomcheck.contract.boundary import guarded

    factory = resolve_factory(impl)
    try:
        return guarded("factory", factory)
    except ImplementationFailed as failed:
        raise ImplementationSpecError(f"{impl}: the factory {failed.detail}") from None


def _close(driver: object, console: Console) -> None:
    """close(), whatever it raises said in one line (the verdict printed above stands)."""
    from loomcheck.contract.shown import shown_exception

    try:
        driver.close()  # type: ignore[attr-defined]
    except BaseException as exc:  # noqa: BLE001 - SystemExit included: it must not become our exit status
        console.print(f"[yellow]implementation-error[/]: close: raised {escape(shown_exception(exc))}")


def _replay(args: argparse.Namespace, console: Console) -> int:
    from loomcheck.run.loading import killable, needs_a_process
    from loomcheck.contract.needs import operations_need

    log = load_regression(args.file)
    kills = needs_a_process([from_model(m) for m in log.operations])
    driver = killable(args.impl) if kills else _made(args.impl)
    try:
        hello = hello_of(driver)
        missing = operations_need([from_model(m) for m in log.operations]) - set(hello.features)
        if missing:  # the run skips such a log; replayed by hand it is not applicable, not a failure
            console.print(f"not applicable: {escape(log.name)} needs driver feature(s) {', '.join(sorted(missing))}, "
                          f"which {escape(hello.name)} does not declare")
            return 0
        session = Session(driver, frozenset(hello.features))
        result = replay(session, log)
    except ImplementationFailed as failed:
        console.print(f"[yellow]implementation-error[/]: {escape(str(failed))}")
        return 2
    finally:
        _close(driver, console)
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
        from loomcheck.run.replay import expectation_of
        from loomcheck.spec.regressions import dump_regression

        log = log.model_copy(update={"expect": expectation_of(result)})
        args.file.write_text(dump_regression(log), encoding="utf-8")
        console.print(f"recorded the expected outcome into {escape(str(args.file))}")
        result.differences = []
    if log.found is not None:
        console.print(f"  originally found against {escape(log.found.implementation)}: {escape(log.found.message)}")
    from loomcheck.run.runner import not_applicable_because

    catalogue = load_catalogue()
    # An invariant whose features (or EVENT_SCHEMA) the implementation does not declare is not applicable
    # to it, named by the log or not: its predicate's complaint (say, a code version it never claimed to
    # record) is no violation of this implementation.
    unjudged = {inv.id: why for inv in catalogue.invariants if (why := not_applicable_because(inv, hello)) is not None}
    for invariant_id in log.invariants:
        if invariant_id in unjudged:
            console.print(f"[dim]not applicable[/] {invariant_id}: {escape(unjudged[invariant_id])}")
    named = set(log.invariants) - set(unjudged)
    hazards = {inv.id for inv in catalogue.invariants if inv.kind == "documented-hazard"}
    failing = [v for v in result.violations if v.invariant in named and v.invariant not in hazards]
    for violation in result.violations:
        if violation.invariant in unjudged:
            continue
        if violation.invariant in hazards:
            console.print(f"[magenta]hazard demonstrated[/] {violation.invariant}: {escape(violation.message)}")
        elif violation.invariant in named:
            _print_explanation(console, "[bold red]violated[/]", result.explain(violation).text())
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
    from loomcheck.contract.jsonvalues import show

    return show(value, 100)


# -- promote -------------------------------------------------------------------------
def _promote(args: argparse.Namespace, console: Console) -> int:
    """The database is a cache; the committed logs are the record (issue 9, run/promotion.py)."""
    from loomcheck.run.promotion import promote

    if not args.sources:
        raise ValueError("promote takes report folders or counterexample files")
    for done in promote(args.sources, to=args.to, name=args.name):
        if done.action == "duplicate":
            console.print(f"skipped {escape(str(done.source))}: the same operations as {escape(str(done.target))}",
                          soft_wrap=True)
        else:
            console.print(f"promoted {escape(str(done.source))} -> {escape(str(done.target))}", soft_wrap=True)
    return 0


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


# -- docs ----------------------------------------------------------------------------
def _docs(args: argparse.Namespace, console: Console) -> int:
    from pydantic import ValidationError

    from loomcheck.reports.catalogue_doc import render_docs
    from loomcheck.spec.regressions import committed_regressions

    reports = []
    for path in args.report:
        try:
            reports.append(Report.model_validate_json(path.read_text(encoding="utf-8")))
        except OSError as exc:
            raise ValueError(f"--report {path}: cannot be read: {exc.strerror or exc}") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"--report {path}: not a loomcheck report: {where + ': ' if where else ''}{first['msg']}") from None
    text = render_docs(load_catalogue(), committed_regressions(), reports)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8", newline="\n")
    except OSError as exc:
        raise ValueError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    console.print(f"wrote {escape(str(args.out))}")
    return 0


# -- manifests (run) -----------------------------------------------------------------
def _manifest_arguments(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("implementation manifests (known failures, unsupported features)")
    group.add_argument("--manifest", type=Path, metavar="FILE",
                       help="a TOML manifest: the failures it expects do not fail the run; its unsupported features count as undeclared")
    group.add_argument("--write-manifest", type=Path, metavar="FILE",
                       help="after the run, write the manifest it calls for (reasons kept from --manifest, or from FILE if it exists)")
    group.add_argument("--strict-manifest", action="store_true", help="exit 1 when an invariant the manifest expects to fail passes")


def _load_manifest(args: argparse.Namespace) -> Manifest | None:
    """Read before the run, so a broken manifest stops it at once (exit 3)."""
    from loomcheck.run.manifest import load_manifest

    if args.manifest is not None:
        return load_manifest(args.manifest)
    if args.write_manifest is not None and args.write_manifest.is_file():
        load_manifest(args.write_manifest)  # its reasons are kept; a broken one is better known now
    peer = peer_manifest(getattr(args, "impl", ""))
    if peer is not None:  # a peer adapter's own: what it cannot judge, and the divergences already analysed
        return load_manifest(peer)
    return None


def _apply_manifest(report: Report, manifest: Manifest, report_dir: Path) -> None:
    from loomcheck.run.manifest import apply_manifest
    from loomcheck.reports.writers import write_html, write_json, write_junit, write_markdown

    apply_manifest(report, manifest)
    write_json(report, report_dir / "report.json")
    write_markdown(report, report_dir / "summary.md")
    write_junit(report, report_dir / "junit.xml")
    write_html([report_dir / "report.json"], report_dir / "report.html")


def _status_cell(record: InvariantRecord) -> str:
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


def _manifest_notes(report: Report, console: Console, args: argparse.Namespace, manifest: Manifest | None) -> None:
    from loomcheck.run.manifest import TODO, dump_manifest, load_manifest, updated_manifest
    from loomcheck.reports.writers import write_atomically

    if report.summary.expectedFailures:
        console.print(f"manifest: {report.summary.expectedFailures} expected failures, not counted against the exit code")
    for record in report.results:
        if record.manifest == "unexpected-pass" and record.expected is not None:
            console.print(f"[bold yellow]unexpected pass[/] {record.id}: the manifest expects {record.expected.status} "
                          f"({escape(record.expected.reason)}); remove the entry or rewrite it with --write-manifest")
    if args.write_manifest is None:
        return
    old = manifest if manifest is not None else (load_manifest(args.write_manifest) if args.write_manifest.is_file() else None)
    updated = updated_manifest(report, old)
    try:
        write_atomically(args.write_manifest, dump_manifest(updated))
    except OSError as exc:
        raise ValueError(f"cannot write {args.write_manifest}: {exc.strerror or exc}") from None
    todo = sum(entry.reason == TODO for entry in updated.expected)
    console.print(f"wrote manifest {escape(str(args.write_manifest))}: {len(updated.expected)} expected failures"
                  + (f", {todo} with reason '{TODO}' to fill in" if todo else ""))
    if not report.complete:
        console.print("[yellow]the run was partial[/]: review the manifest before committing it")


# -- diff ----------------------------------------------------------------------------
def _diff(args: argparse.Namespace, console: Console) -> int:
    from loomcheck.reports.diff import describe, diff_reports
    from loomcheck.reports.reading import ReportUnreadable, read_report

    if args.base is None or args.candidate is None:
        raise ValueError("diff takes two report.json files: BASE CANDIDATE")
    for path in (args.base, args.candidate):
        if not path.is_file():
            raise ValueError(f"{path}: no such report file")
    try:
        base = read_report(args.base)
    except ReportUnreadable as exc:
        raise ValueError(f"the base report is unusable: {exc}") from None  # nothing to compare against: exit 3
    try:
        candidate = read_report(args.candidate)
    except ReportUnreadable as exc:
        console.print(f"[yellow]candidate unreadable[/]: {escape(str(exc))}")
        return 2
    diff = diff_reports(base, candidate)
    for line in describe(diff, base, candidate):
        console.print(escape(line))
    return diff.exit_code()


# -- matrix --------------------------------------------------------------------------
def _matrix(args: argparse.Namespace, console: Console) -> int:
    from loomcheck.reports.html import render_matrix
    from loomcheck.reports.reading import ReportUnreadable, read_report
    from loomcheck.reports.writers import write_atomically

    if not args.reports:
        raise ValueError("matrix takes one or more report.json files")
    reports = []
    for path in args.reports:
        try:
            reports.append((path, read_report(path)))
        except (FileNotFoundError, ReportUnreadable) as exc:
            raise ValueError(str(exc)) from None
    text = render_matrix(reports, html_dir=args.out.parent)
    try:
        write_atomically(args.out, text)
    except OSError as exc:
        raise ValueError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    rows = len({record.id for _, report in reports for record in report.results})
    console.print(f"wrote {escape(str(args.out))}: {rows} invariants × {len(reports)} implementations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
