"""The commands besides run and those on one counterexample: `serve` (a Python kernel over the
driver protocol), `catalogue`, `docs`, `fleet`, `diff` and `matrix` (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from loomcheck.cli.console import progress_bar
from loomcheck.reports.model import Report
from loomcheck.run.loading import resolve_factory
from loomcheck.spec.catalogue import export_json, load_catalogue

if TYPE_CHECKING:
    from loomcheck.reports.diff import Change


def serve_command(args: argparse.Namespace, console: Console) -> int:
    """stdout carries the protocol only: everything else goes to stderr."""
    from loomcheck.protocol.server import serve

    if args.impl.startswith("stdio:"):
        raise ValueError("serve takes a Python kernel: reference, reference:memory or python:MODULE:FACTORY")
    driver = resolve_factory(args.impl)()
    try:
        return serve(driver)
    finally:
        driver.close()


def catalogue_command(args: argparse.Namespace, console: Console) -> int:
    catalogue = load_catalogue()
    if args.json:
        sys.stdout.write(export_json(catalogue))
        return 0
    for inv in catalogue.invariants:
        console.print(f"[bold]{inv.id}[/] (ADR {inv.adr} {inv.decision}, from {inv.since}; checks: {', '.join(inv.checks)})")
        console.print(f"    {escape(inv.statement)}")
    return 0


def docs_command(args: argparse.Namespace, console: Console) -> int:
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


def fleet_command(args: argparse.Namespace, console: Console) -> int:
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
    with progress_bar(console) as progress:
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


def diff_command(args: argparse.Namespace, console: Console) -> int:
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
    _replay_newly_failing(console, diff.newly_failing, candidate, args.candidate)
    return diff.exit_code()


def _replay_newly_failing(console: Console, changes: list[Change], candidate: Report, path: Path) -> None:
    """The command that replays each newly failing invariant's counterexample, found beside the
    candidate report wherever it is now (run/printed_commands.py)."""
    from loomcheck.run.printed_commands import from_report, replay_command

    records = {record.id: record for record in candidate.results}
    for change in changes:
        counterexample = records[change.id].counterexample if change.id in records else None
        if counterexample:
            command = replay_command(from_report(counterexample, path), candidate.implementation.spec)
            console.print(f"replay {change.id}: {escape(command)}", soft_wrap=True)


def matrix_command(args: argparse.Namespace, console: Console) -> int:
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
