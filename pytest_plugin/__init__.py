"""loomcheck inside a kernel's own pytest run: one pytest item per invariant, collected from a
`loomcheck.toml` among the tests, the catalogue run once per session. Enabled explicitly
(`pytest_plugins = ["loomcheck.pytest_plugin"]` or `-p loomcheck.pytest_plugin`), never by an
entry point. How to use it, and why it collects from a file: docs/pytest.md.

PYTEST_DONT_REWRITE: a conftest that imports `conformance` before pytest loads this module as a
plugin must not earn a warning for it (the module has no assertion worth rewriting)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from loomcheck.pytest_plugin.items import MARKER, ConformanceFailure, InvariantItem, LoomcheckFile
from loomcheck.pytest_plugin.session import RUNS, conformance
from loomcheck.pytest_plugin.settings import ENTRY_FILE, check_profile

ENTRY_SEEN = pytest.StashKey[bool]()


class LoomcheckWarning(pytest.PytestWarning):
    """The plugin was asked for something it cannot do as asked."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loomcheck", "loomcheck conformance (items collected from loomcheck.toml)")
    group.addoption("--loomcheck-impl", metavar="SPEC",
                    help="the implementation: reference:memory, python:MODULE:FACTORY, python:FILE.py:FACTORY "
                         "or stdio:COMMAND (overrides impl in loomcheck.toml)")
    group.addoption("--loomcheck-only", nargs="+", action="extend", metavar="ID",
                    help="invariant ids or prefixes such as gate. (overrides only in loomcheck.toml)")
    group.addoption("--loomcheck-profile", metavar="PROFILE", help="ci (default: fixed seeds, bounded), dev or campaign")
    group.addoption("--loomcheck-report", metavar="DIR",
                    help="where report.json and counterexamples go (default: a folder in pytest's cache)")
    group.addoption("--loomcheck-manifest", metavar="PATH",
                    help="an implementation manifest: the failures it expects become xfail")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: a loomcheck conformance item (one invariant of the catalogue)")
    config.stash[RUNS] = {}
    config.stash[ENTRY_SEEN] = False
    # Usage errors in the options stop the session before collection, as pytest's own do.
    impl = config.getoption("loomcheck_impl")
    if impl is not None:
        from loomcheck.run.loading import ImplementationSpecError, check_spec

        try:
            check_spec(impl)
        except ImplementationSpecError as exc:
            raise pytest.UsageError(f"--loomcheck-impl: {exc}") from None
    profile = config.getoption("loomcheck_profile")
    if profile is not None:
        try:
            check_profile(profile, "--loomcheck-profile")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    only = config.getoption("loomcheck_only")
    if only:
        from loomcheck.run.state import select
        from loomcheck.spec.catalogue import load_catalogue

        try:
            select(load_catalogue(), only)
        except ValueError as exc:
            raise pytest.UsageError(str(exc).replace("--only", "--loomcheck-only", 1)) from None


def pytest_report_header(config: pytest.Config) -> str:
    from loomcheck import __version__

    impl = config.getoption("loomcheck_impl")
    given = f"--loomcheck-impl {impl}" if impl else f"impl from {ENTRY_FILE}"
    return f"loomcheck {__version__}: conformance items from {ENTRY_FILE} ({given})"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> LoomcheckFile | None:
    if file_path.name != ENTRY_FILE:
        return None
    parent.config.stash[ENTRY_SEEN] = True
    return LoomcheckFile.from_parent(parent, path=file_path)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("loomcheck_impl") and not config.stash.get(ENTRY_SEEN, False):
        warnings.warn(LoomcheckWarning(
            f"--loomcheck-impl was given but no {ENTRY_FILE} was collected, so no conformance item runs: "
            f"put a {ENTRY_FILE} (it may be empty) among the tests pytest collects"), stacklevel=1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, InvariantItem):
        item.own_duration(report)
    return report


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    runs = config.stash.get(RUNS, {})
    if not runs:
        return
    terminalreporter.section("loomcheck")
    for settings, outcome in runs.items():
        if outcome.report is None:
            terminalreporter.write_line(f"{settings.impl}: the run could not be made: {outcome.problem}", red=True)
            continue
        report, s = outcome.report, outcome.report.summary
        impl = report.implementation
        named = impl.spec if impl.name == "unknown" else f"{impl.name} {impl.version} ({impl.spec})"  # no hello
        demonstrations = f", {s.hazards} demonstrations" if s.hazards else ""
        not_run = f", {len(outcome.unjudged)} not run" if outcome.unjudged else ""  # counted as errors in report.json
        terminalreporter.write_line(
            f"{named}, profile {report.profile}: {s.passed} passed, {s.failed} failed, "
            f"{s.notApplicable} not applicable, {s.errors - len(outcome.unjudged)} errors{demonstrations}{not_run}"
            + ("" if report.complete else f" (incomplete{': ' + report.stopped if report.stopped else ''})"))
        for finding in report.findings:
            terminalreporter.write_line(f"  {finding.kind}: {finding.message}", yellow=True)
        if outcome.report_dir is not None:
            terminalreporter.write_line(f"  report: {outcome.report_dir / 'report.json'}")


__all__ = ["conformance", "ConformanceFailure", "InvariantItem", "LoomcheckFile", "LoomcheckWarning"]
