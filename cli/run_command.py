"""`loomcheck run`: every input checked before the run starts (a bad one exits 3 and leaves no
report behind), the run with its progress, what it prints at the verbosity asked (cli/run_report.py),
and the manifest's notes (docs/cli.md)."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from loomcheck.cli.console import NORMAL, QUIET, VERBOSE, RunProgress
from loomcheck.cli.run_report import print_report
from loomcheck.contract import interrupts
from loomcheck.peers import peer_manifest
from loomcheck.reports.model import Report
from loomcheck.run.loading import TransportOptions, check_spec, resolve_factory
from loomcheck.run.manifest import Manifest, load_manifest
from loomcheck.spec.catalogue import load_catalogue

if TYPE_CHECKING:
    from loomcheck.reports.placeholder import Placeholder
    from loomcheck.run.runner import Run

SUITE_FAILED = 3


def run_command(args: argparse.Namespace, console: Console) -> int:
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
        console.print(f"[bold red]error[/]: {escape(run.load_failure)}", soft_wrap=True)
        return SUITE_FAILED
    notes = _manifest_notes(report, args, manifest, verbosity(args))
    # The manifest's expectations are in the report: the runner applied it.
    print_report(report, console, args.report, verbosity(args), strict=args.strict_manifest, notes=notes)
    return report.exit_code(strict=args.strict_manifest)


def verbosity(args: argparse.Namespace) -> int:
    """-q: the failures and the verdict; -v: every table too; the default in between."""
    return max(QUIET, min(VERBOSE, NORMAL + args.verbose - args.quiet))


def _prepare(args: argparse.Namespace, console: Console) -> tuple[Run, Manifest | None, RunProgress]:
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
    quiet = verbosity(args) == QUIET
    if database is not None and not quiet:
        console.print(f"example database: {escape(choice.describe())}")
    manifest = _load_manifest(args)
    _check_writable(args.report)  # after every input is known good: a refused run leaves no directory behind
    shipped = peer_manifest(args.impl) if args.manifest is None else None
    if shipped is not None and not quiet:
        console.print(f"manifest: the {args.impl} adapter's own ({escape(str(shipped))}); --manifest FILE uses another",
                      soft_wrap=True)
    progress = RunProgress(console, silent=quiet)
    run = Run(args.impl, catalogue, profile=args.profile, only=args.only, report_dir=args.report,
              seed=args.seed, progress=progress, transport=_transport_options(args), manifest=manifest,
              explore_depth=args.explore_depth, explore_seconds=args.explore_budget, database=database,
              profile_checks=args.profile_checks)
    if args.seed is None and run.seed is not None and not quiet:  # drawn for this run: shown now, in case it never ends
        console.print(f"seed {run.seed} (drawn; --seed {run.seed} draws the same examples)")
    _checkpoint()
    return run, manifest, progress


def _checkpoint() -> None:
    """Before the run begins: the user's signal, held by flag, stops it here."""
    if interrupts.requested() is not None:
        raise KeyboardInterrupt


def _check_writable(report_dir: Path) -> None:
    """The report directory must take files before a run spends minutes on a kernel."""
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=report_dir):
            pass
    except OSError as exc:
        raise ValueError(f"--report {report_dir}: cannot write there: {exc.strerror or exc}") from None


def _transport_options(args: argparse.Namespace) -> TransportOptions:
    if args.timeout <= 0 or args.restarts < 0 or args.max_line < 1024 or (args.deadline is not None and args.deadline <= 0):
        raise ValueError("--timeout and --deadline must be positive, --restarts at least 0, --max-line at least 1024")
    deadline = time.monotonic() + args.deadline if args.deadline is not None else None
    return TransportOptions(timeout=args.timeout, max_line=args.max_line, restarts=args.restarts,
                            validate=args.validate_protocol, deadline=deadline)


def _load_manifest(args: argparse.Namespace) -> Manifest | None:
    """Read before the run, so a broken manifest stops it at once (exit 3)."""
    if args.manifest is not None:
        return load_manifest(args.manifest)
    if args.write_manifest is not None and args.write_manifest.is_file():
        load_manifest(args.write_manifest)  # its reasons are kept; a broken one is better known now
    peer = peer_manifest(getattr(args, "impl", ""))
    if peer is not None:  # a peer adapter's own: what it cannot judge, and the divergences already analysed
        return load_manifest(peer)
    return None


def _manifest_notes(report: Report, args: argparse.Namespace, manifest: Manifest | None, verbosity: int) -> list[str]:
    """What the manifest says of the run: its expected failures (not with -q), its unexpected passes;
    and with --write-manifest the manifest this run calls for written (the old reasons kept)."""
    from loomcheck.reports.writers import write_atomically
    from loomcheck.run.manifest import TODO, dump_manifest, updated_manifest

    notes = []
    if report.summary.expectedFailures and verbosity > QUIET:
        notes.append(f"manifest: {report.summary.expectedFailures} expected failures, not counted against the exit code")
    for record in report.results:
        if record.manifest == "unexpected-pass" and record.expected is not None:
            notes.append(f"[bold yellow]unexpected pass[/] {record.id}: the manifest expects {record.expected.status} "
                         f"({escape(record.expected.reason)}); remove the entry or rewrite it with --write-manifest")
    if args.write_manifest is None:
        return notes
    old = manifest if manifest is not None else (load_manifest(args.write_manifest) if args.write_manifest.is_file() else None)
    updated = updated_manifest(report, old)
    try:
        write_atomically(args.write_manifest, dump_manifest(updated))
    except OSError as exc:
        raise ValueError(f"cannot write {args.write_manifest}: {exc.strerror or exc}") from None
    todo = sum(entry.reason == TODO for entry in updated.expected)
    notes.append(f"wrote manifest {escape(str(args.write_manifest))}: {len(updated.expected)} expected failures"
                 + (f", {todo} with reason '{TODO}' to fill in" if todo else ""))
    if not report.complete:
        notes.append("[yellow]the run was partial[/]: review the manifest before committing it")
    return notes
