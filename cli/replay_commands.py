"""The commands on one counterexample or regression log: `loomcheck replay` (run it again and
say what differs), `loomcheck repro` (a reproducer for the kernel's maintainers) and
`loomcheck promote` (into the committed regression logs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from loomcheck.cli.console import print_explanation
from loomcheck.contract.driver import Hello
from loomcheck.contract.jsonvalues import show
from loomcheck.contract.script import describe, from_model
from loomcheck.contract.boundary import ImplementationFailed, guarded
from loomcheck.contract.session import Session, hello_of
from loomcheck.contract.shown import shown_exception
from loomcheck.run.applicability import declared_features, not_applicable_because, undeclared_needs
from loomcheck.run.loading import ImplementationSpecError, killable, needs_a_process, resolve_factory
from loomcheck.run.manifest import Manifest, shipped_manifest
from loomcheck.run.printed_commands import run_reproducer
from loomcheck.run.replay import ReplayResult, expectation_of, replay
from loomcheck.spec.catalogue import Catalogue, load_catalogue
from loomcheck.properties.registry import Violation
from loomcheck.spec.regressions import Found, RegressionLog, dump_regression, find_regression, load_regression


def replay_command(args: argparse.Namespace, console: Console) -> int:
    found = find_regression(args.file)  # a path, or a committed log's name (spec/regressions.py)
    log = load_regression(found)
    catalogue = load_catalogue()
    manifest = shipped_manifest(args.impl, catalogue)  # a peer adapter's own, as its runs use it
    operations = [from_model(m) for m in log.operations]
    driver = killable(args.impl) if needs_a_process(operations) else _made(args.impl)
    try:
        hello = hello_of(driver)
        features = declared_features(hello.features, manifest)
        missing = undeclared_needs(operations, features)
        if missing:  # the run skips such a log; replayed by hand it is not applicable, not a failure
            console.print(f"not applicable: {escape(log.name)} needs driver feature(s) {', '.join(missing)}, "
                          f"which {escape(hello.name)} does not declare")
            return 0
        result = replay(Session(driver, frozenset(features)), log)
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
            console.print(f"    #{event['seq']} {escape(str(event['type']))} {escape(show(event['payload'], 100))}")
    if args.record_expected:
        log = log.model_copy(update={"expect": expectation_of(result)})
        Path(str(found)).write_text(dump_regression(log), encoding="utf-8")
        console.print(f"recorded the expected outcome into {escape(str(found))}")
        result.differences = []
    if log.found is not None:
        console.print(f"  originally found against {escape(log.found.implementation)}: {escape(log.found.message)}")
    code = _verdict(console, log, result, catalogue, hello, manifest)
    if args.html is not None:
        _write_page(args.html, log, result, f"{hello.name} {hello.version} ({args.impl})",
                    _failing(log, result, catalogue, hello, manifest), code)
        console.print(f"wrote {escape(str(args.html))}", soft_wrap=True)
    return code


def _verdict(console: Console, log: RegressionLog, result: ReplayResult, catalogue: Catalogue, hello: Hello,
             manifest: Manifest | None) -> int:
    """What the replay violated and where it differs from the log's expectation: exit 1, else 0."""
    # An invariant that does not apply to the implementation (run/applicability.py) is set aside, named
    # by the log or not: its predicate's complaint (say, a code version it never claimed to record) is
    # no violation of this implementation.
    unjudged = {inv.id: why for inv in catalogue.invariants
                if (why := not_applicable_because(inv, hello, manifest)) is not None}
    for invariant_id in log.invariants:
        if invariant_id in unjudged:
            console.print(f"[dim]not applicable[/] {invariant_id}: {escape(unjudged[invariant_id])}")
    named = set(log.invariants) - set(unjudged)
    hazards = {inv.id for inv in catalogue.invariants if inv.kind == "documented-hazard"}
    failing = _failing(log, result, catalogue, hello, manifest)
    for violation in result.violations:
        if violation.invariant in unjudged:
            continue
        if violation.invariant in hazards:
            console.print(f"[magenta]hazard demonstrated[/] {violation.invariant}: {escape(violation.message)}")
        elif violation.invariant in named:
            print_explanation(console, "[bold red]violated[/]", result.explain(violation).text())
        else:
            console.print(f"[yellow]also violated[/] {violation.invariant} (not named by this log): {escape(violation.message)}")
    for difference in result.differences:
        console.print(f"[bold red]differs[/] from the expected outcome: {escape(difference)}")
    if failing or result.differences:
        return 1
    console.print("[green]no invariant this log names was violated, and every outcome was as expected[/]" if log.expect
                  else "[green]no invariant this log names was violated[/] (the log records no expected outcome)")
    return 0


def _failing(log: RegressionLog, result: ReplayResult, catalogue: Catalogue, hello: Hello,
             manifest: Manifest | None) -> list[Violation]:
    """The violations that fail the replay: of an invariant the log names that applies and is no
    documented hazard."""
    unjudged = {inv.id for inv in catalogue.invariants if not_applicable_because(inv, hello, manifest) is not None}
    hazards = {inv.id for inv in catalogue.invariants if inv.kind == "documented-hazard"}
    return [v for v in result.violations if v.invariant in set(log.invariants) - unjudged - hazards]


def _write_page(out: Path, log: RegressionLog, result: ReplayResult, implementation: str,
                failing: list[Violation], code: int) -> None:
    """The replay's timeline page, one picture per invariant violated (its first violation)."""
    from loomcheck.reports.model import ExplanationModel
    from loomcheck.reports.report_page import render_replay_page
    from loomcheck.reports.writers import write_atomically
    from loomcheck.run.counterexamples import what_it_did

    first = {v.invariant: v for v in reversed(failing)}
    explained = [(i, ExplanationModel.model_validate(result.explain(first[i]).to_json())) for i in dict.fromkeys(
        v.invariant for v in failing)]
    found = Found(invariant=failing[0].invariant if failing else log.invariants[0],
                  message=failing[0].message if failing else "", implementation=implementation, **what_it_did(result))
    verdict = "passed" if code == 0 else "failed: " + ("a violation" if failing else "it differs from the expected outcome")
    write_atomically(out, render_replay_page(log, found, implementation, explained, result.differences,
                                             str(result.failure) if result.failure else None, verdict))


def _made(impl: str) -> Any:
    """The factory's driver; whatever the factory raises (SystemExit too) is a one-line tool error, exit 3."""
    factory = resolve_factory(impl)
    try:
        return guarded("factory", factory)
    except ImplementationFailed as failed:
        raise ImplementationSpecError(f"{impl}: the factory {failed.detail}") from None


def _close(driver: Any, console: Console) -> None:
    """close(), whatever it raises said in one line (the verdict printed above stands)."""
    try:
        driver.close()
    except BaseException as exc:  # noqa: BLE001 - SystemExit included: it must not become our exit status
        console.print(f"[yellow]implementation-error[/]: close: raised {escape(shown_exception(exc))}")


def repro_command(args: argparse.Namespace, console: Console) -> int:
    from loomcheck.run.repro import ReproError, write_repro

    found = find_regression(args.file)
    log = load_regression(found)
    given = Path(args.file)  # beside the file given; a committed log named (it lives in the package): here
    out = args.out or (given.with_name(given.stem + ".repro") if given.exists() else Path(f"{log.name}.repro"))
    try:
        written = write_repro(log, args.impl, out)
    except ReproError as exc:
        console.print(f"[yellow]cannot write a reproducer[/]: {escape(str(exc))}")
        return 2
    for path in written:
        console.print(f"wrote {escape(str(path))}", soft_wrap=True)
    console.print(f"run it from here: {escape(run_reproducer(written[0]))}  (exit 1 while it reproduces)", soft_wrap=True)
    return 0


def promote_command(args: argparse.Namespace, console: Console) -> int:
    """The example database is a cache; the committed logs are the record (run/promotion.py)."""
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
