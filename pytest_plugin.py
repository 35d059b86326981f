"""loomcheck inside a kernel's own pytest run: one pytest item per invariant.

Explicit, never automatic: loomcheck registers no `pytest11` entry point, so
installing it changes nobody's test run. A project enables the plugin in its
top-level conftest.py (or with `pytest -p loomcheck.pytest_plugin`):

    pytest_plugins = ["loomcheck.pytest_plugin"]

and puts a `loomcheck.toml` among its tests, the file the items are collected
from (every key optional; the `--loomcheck-*` options override them):

    impl = "python:mykernel.adapter:make"   # the kernel; without it (or --loomcheck-impl) nothing is collected
    only = ["gate.", "resume."]            # invariant ids or prefixes
    profile = "ci"                         # ci, dev or campaign
    seed = 1                               # a seed instead of the profile's fixed one
    report = "loomcheck-report"            # relative to this file; default: a folder in pytest's cache
    manifest = "loomcheck-manifest.toml"   # known failures, unsupported features (loomcheck.run.manifest); relative to this file

Why a file: it is the collection entry point pytest documents for tests that
are not Python functions (`pytest_collect_file` returning a `pytest.File`
whose `collect()` yields Items, "Working with non-python tests"). Items added
at session level in `pytest_collection_modifyitems` have no collector and no
collection report (pytest documents that hook as filtering and reordering;
pytest-mypy stopped injecting its status item there because it broke
`--looponfail`). Collected from a file, every item has a stable node id
(`tests/loomcheck.toml::gate.i-receives-entry-i`), so `-k`, `-m loomcheck`,
`--lf`, `--deselect`, `pytest tests/loomcheck.toml` and xdist's
`--dist loadfile` work as for any test.

The catalogue runs once per session, lazily, when the first item is set up,
through `loomcheck.run.runner.Run`, over the invariants whose items were
selected; every item then reads its record from that report:

    pass                                   passed
    fail                                   failed: the message, the counterexample and the replay command
    error                                  error (at setup), with the run's findings
    not-applicable                         skipped, with the reason
    hazard, residual, not-reproduced       skipped: documented hazards and residuals are demonstrated, never passed
    a failure the manifest expects         xfailed; a pass where it expects one: XPASS

`conformance(impl)` gives the same report to a plain test function.

PYTEST_DONT_REWRITE: a conftest that imports `conformance` before pytest
loads this module as a plugin must not earn a warning for it (the module
has no assertion worth rewriting)."""

from __future__ import annotations

import hashlib
import importlib
import re
import shlex
import shutil
import tempfile
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from loomcheck.reports.model import InvariantRecord, Report
    from loomcheck.spec.catalogue import Invariant

ENTRY_FILE = "loomcheck.toml"
MARKER = "loomcheck"
DEMONSTRATED = ("hazard", "residual", "not-reproduced")


def _manifest_supported() -> bool:
    try:
        importlib.import_module("loomcheck.run.manifest")  # written alongside this plugin; optional
    except ImportError:
        return False
    return True


# -- settings ------------------------------------------------------------------------
class FileSettings(BaseModel):
    """The keys of loomcheck.toml (a typo is an error, not a silently ignored key)."""

    model_config = ConfigDict(extra="forbid")

    impl: str | None = Field(default=None, min_length=1)
    only: list[str] | None = Field(default=None, min_length=1)
    profile: str | None = None
    seed: int | None = None
    report: str | None = Field(default=None, min_length=1)
    manifest: str | None = Field(default=None, min_length=1)


@dataclass(frozen=True)
class RunSettings:
    """What one run is: items with equal settings share it."""

    impl: str
    only: tuple[str, ...] | None = None
    profile: str = "ci"
    seed: int | None = None
    report_dir: Path | None = None  # None: a folder of pytest's cache (or a temporary one)
    manifest: Path | None = None


@dataclass
class RunOutcome:
    report: Report | None = None
    problem: str | None = None  # the run could not be made at all
    report_dir: Path | None = None


RUNS = pytest.StashKey[dict[RunSettings, RunOutcome]]()
ENTRY_SEEN = pytest.StashKey[bool]()


class LoomcheckWarning(pytest.PytestWarning):
    """The plugin was asked for something it cannot do as asked."""


# -- hooks ---------------------------------------------------------------------------
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
    if _manifest_supported():
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
        _check_profile(profile, "--loomcheck-profile")
    only = config.getoption("loomcheck_only")
    if only:
        from loomcheck.run.runner import select
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
        terminalreporter.write_line(
            f"{named}, profile {report.profile}: {s.passed} passed, {s.failed} failed, "
            f"{s.notApplicable} not applicable, {s.errors} errors{demonstrations}"
            + ("" if report.complete else " (incomplete)"))
        for finding in report.findings:
            terminalreporter.write_line(f"  {finding.kind}: {finding.message}", yellow=True)
        if outcome.report_dir is not None:
            terminalreporter.write_line(f"  report: {outcome.report_dir / 'report.json'}")


# -- collection ----------------------------------------------------------------------
class LoomcheckFile(pytest.File):
    """loomcheck.toml: the invariants selected for the implementation it (or the command line) names."""

    def collect(self) -> Iterator[pytest.Item]:
        from loomcheck.run.runner import select
        from loomcheck.spec.catalogue import load_catalogue

        settings = self._settings()
        if settings is None:
            return  # no implementation named: the conformance items are opt-in
        try:
            selected = select(load_catalogue(), list(settings.only) if settings.only else None)
        except ValueError as exc:
            raise self.CollectError(f"{self.path}: {str(exc).replace('--only', 'only', 1)}") from None
        expected = self._expected(settings)
        for invariant in selected:
            item = InvariantItem.from_parent(self, name=invariant.id, invariant=invariant, settings=settings)
            if invariant.id in expected:
                # An xfail that only the failure the manifest names satisfies: any other exception fails
                # the item, and a pass is an XPASS (the manifest is stale).
                item.add_marker(pytest.mark.xfail(reason=expected[invariant.id], raises=ExpectedByManifest, strict=False))
            yield item

    def _settings(self) -> RunSettings | None:
        from loomcheck.spec.errors import SpecError
        from loomcheck.spec.files import read_toml

        try:
            raw = read_toml(self.path, str(self.path))
            given = FileSettings.model_validate(raw)
        except SpecError as exc:
            raise self.CollectError(str(exc)) from None
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors())
            raise self.CollectError(f"{self.path}: {problems}") from None
        config, here = self.config, self.path.parent
        cli_dir = config.invocation_params.dir
        impl = config.getoption("loomcheck_impl") or (_relative_impl(given.impl, here) if given.impl else None)
        if impl is None:
            return None
        from loomcheck.run.loading import ImplementationSpecError, check_spec

        try:
            check_spec(impl)
        except ImplementationSpecError as exc:
            raise self.CollectError(f"{self.path}: impl: {exc}") from None
        profile = config.getoption("loomcheck_profile") or given.profile or "ci"
        if config.getoption("loomcheck_profile") is None and given.profile is not None:
            try:
                _check_profile(given.profile, "profile")
            except pytest.UsageError as exc:
                raise self.CollectError(f"{self.path}: {exc}") from None
        only = config.getoption("loomcheck_only") or given.only
        report = config.getoption("loomcheck_report")
        report_dir = cli_dir / report if report else (here / given.report if given.report else None)
        manifest_option = config.getoption("loomcheck_manifest", default=None)
        manifest = cli_dir / manifest_option if manifest_option else (here / given.manifest if given.manifest else None)
        if manifest is not None and not _manifest_supported():
            raise self.CollectError(f"{self.path}: manifest: this loomcheck has no manifest support")
        return RunSettings(impl=impl, only=tuple(only) if only else None, profile=profile, seed=given.seed,
                           report_dir=report_dir, manifest=manifest)

    def _expected(self, settings: RunSettings) -> dict[str, str]:
        """invariant id -> the xfail reason, for every invariant the manifest expects to fail."""
        if settings.manifest is None:
            return {}
        from loomcheck.run.manifest import load_manifest
        from loomcheck.spec.errors import SpecError

        try:
            manifest = load_manifest(settings.manifest)
        except SpecError as exc:
            raise self.CollectError(str(exc)) from None
        return {entry.invariant: f"expected {entry.status} (manifest): {entry.reason}" for entry in manifest.expected}


def _relative_impl(spec: str, here: Path) -> str:
    """A kernel file named in loomcheck.toml is found beside the file, not beside the cwd."""
    if spec.startswith("python:"):
        target, _, factory = spec[len("python:"):].rpartition(":")
        if target.endswith(".py") and not Path(target).is_absolute():
            return f"python:{here / target}:{factory}"
    return spec


def _check_profile(profile: str, where: str) -> None:
    from loomcheck.machine.state_machine import PROFILES

    if profile not in PROFILES:
        raise pytest.UsageError(f"{where} {profile!r}: choose one of {', '.join(PROFILES)}")


# -- items ---------------------------------------------------------------------------
class ConformanceFailure(Exception):
    """An invariant the implementation violated; `repr_failure` shows it without a traceback."""

    def __init__(self, record: InvariantRecord, report: Report) -> None:
        super().__init__(record.message or "violated")
        self.record = record
        self.report = report

    def describe(self) -> str:
        record, impl = self.record, self.report.implementation
        lines = [f"{record.id} (ADR {record.adr} {record.decision}): {record.title}",
                 f"{'violated' if record.status == 'fail' else record.status} by {impl.name} {impl.version}: "
                 f"{record.message or ''}"]
        if record.examplesToFailure:
            lines.append(f"first seen in example {record.examplesToFailure}, then shrunk")
        if record.counterexample:
            size = ""
            if record.counterexampleOperations is not None:
                size = f" ({record.counterexampleOperations} operations, {record.counterexampleEvents} events)"
            lines.append(f"counterexample{size}: {record.counterexample}")
            lines.append(f"replay: loomcheck replay {shlex.quote(record.counterexample)} --impl {shlex.quote(impl.spec)}")
        return "\n".join(lines)


class ExpectedByManifest(ConformanceFailure):
    """A failure or error exactly as the implementation's manifest expects it (reported as xfail)."""


class InvariantItem(pytest.Item):
    """One invariant of the catalogue, judged by the session's run."""

    def __init__(self, *, invariant: Invariant, settings: RunSettings, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.invariant = invariant
        self.settings = settings
        self.record: InvariantRecord | None = None
        self.add_marker(MARKER)
        self.extra_keyword_matches.add(f"adr{invariant.adr}")  # -k adr0057

    def setup(self) -> None:
        outcome = self._outcome()
        if outcome.report is None:
            pytest.fail(f"loomcheck could not run: {outcome.problem}", pytrace=False)
        report = outcome.report
        self.record = next((r for r in report.results if r.id == self.name), None)
        if self.record is None:
            pytest.fail(f"the run has no record of {self.name}{_findings(report)}", pytrace=False)
        if getattr(self.record, "excused", False):  # the manifest expects exactly this failure
            raise ExpectedByManifest(self.record, report)
        if self.record.status == "error":
            pytest.fail(f"{self.name}: {self.record.message or 'error'}{_findings(report)}", pytrace=False)

    def runtest(self) -> None:
        record, report = self.record, self._outcome().report
        assert record is not None and report is not None  # setup found both or failed
        if record.status == "pass":
            return
        if record.status == "not-applicable":
            _skip(f"not applicable: {record.message or ''}")
        if record.status in DEMONSTRATED:
            _skip(f"{record.kind.replace('-', ' ')}, {record.status}: {record.message or ''}")
        if record.disagrees and report.profileChecks != "strict":  # a choice the ADRs leave open
            _skip(f"profile disagreement ({record.profile}, spec/profiles.toml): {record.message or ''}")
        raise ConformanceFailure(record, report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ConformanceFailure):
            return excinfo.value.describe()
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"loomcheck {self.name}"

    def _outcome(self) -> RunOutcome:
        runs = self.config.stash[RUNS]
        if self.settings not in runs:
            # Run what was selected, once: the items of this run that survived -k, --lf, --deselect.
            wanted = [item.name for item in self.session.items
                      if isinstance(item, InvariantItem) and item.settings == self.settings]
            report_dir = self.settings.report_dir or self._default_dir()
            runs[self.settings] = _run(replace(self.settings, only=tuple(wanted), report_dir=report_dir))
        return runs[self.settings]

    def _default_dir(self) -> Path:
        cache = getattr(self.config, "cache", None)
        if cache is None:  # -p no:cacheprovider
            return Path(tempfile.mkdtemp(prefix="loomcheck-"))
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.settings.impl)
        if len(slug) > 60:  # a python:FILE.py spec holds an absolute path
            slug = f"{slug[-50:]}-{hashlib.sha1(self.settings.impl.encode()).hexdigest()[:8]}"
        folder = cache.mkdir("loomcheck") / slug
        shutil.rmtree(folder / "counterexamples", ignore_errors=True)  # ours: no stale counterexample survives
        return folder


def _skip(reason: str) -> None:
    """Skip, reported at the item (loomcheck.toml) rather than at this line of the plugin, as
    pytest's own skip marker does; `_use_item_location` is pytest's private spelling of that, so
    a pytest without it gets a plain skip."""
    try:
        raise pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:
        pytest.skip(reason)


def _findings(report: Report) -> str:
    return "".join(f"\n{finding.kind}: {finding.message}" for finding in report.findings)


# -- running -------------------------------------------------------------------------
def _run(settings: RunSettings) -> RunOutcome:
    """One run into `settings.report_dir`; a run that cannot be made is an outcome too, so a
    session asks once, not once per item."""
    from loomcheck.run.runner import Run
    from loomcheck.reports.writers import write_json, write_junit
    from loomcheck.spec.catalogue import load_catalogue
    from loomcheck.spec.errors import SpecError

    report_dir = settings.report_dir or Path(tempfile.mkdtemp(prefix="loomcheck-"))
    try:
        manifest = None
        if settings.manifest is not None:
            from loomcheck.run.manifest import load_manifest

            manifest = load_manifest(settings.manifest)
        run = Run(settings.impl, load_catalogue(), profile=settings.profile,
                  only=list(settings.only) if settings.only else None, report_dir=report_dir, seed=settings.seed,
                  manifest=manifest)  # its unsupported features count as undeclared
        report = run.execute()
    except (ValueError, SpecError) as exc:
        return RunOutcome(problem=str(exc), report_dir=report_dir)
    except Exception as exc:  # noqa: BLE001 - a defect of the suite: reported on every item, not retried
        return RunOutcome(problem=f"{type(exc).__name__}: {exc}", report_dir=report_dir)
    if manifest is not None:
        from loomcheck.run.manifest import apply_manifest

        apply_manifest(report, manifest)  # after the run, as `loomcheck run --manifest` does
        write_json(report, report_dir / "report.json")
        write_junit(report, report_dir / "junit.xml")
    return RunOutcome(report=report, report_dir=report_dir)


_CONFORMANCE: dict[RunSettings, Report] = {}


def conformance(impl: str, *, only: Sequence[str] | None = None, profile: str = "ci", seed: int | None = None,
                report_dir: Path | str | None = None, manifest: Path | str | None = None) -> Report:
    """The report of the catalogue run against `impl`, for a plain test:

        from loomcheck.pytest_plugin import conformance

        def test_my_kernel_conforms():
            report = conformance("python:mykernel.adapter:make", only=["gate."])
            assert report.exit_code() == 0, [r.id for r in report.results if r.status in ("fail", "error")]

    Run once per process for the same implementation and selection (the same
    Report object is returned); `report_dir` (default: a new temporary folder)
    is where the first call writes report.json and the counterexamples.
    Raises ValueError for a bad implementation spec, profile or selection."""
    from loomcheck.run.loading import ImplementationSpecError, check_spec

    try:
        check_spec(impl)
    except ImplementationSpecError as exc:
        raise ValueError(str(exc)) from None
    _check_profile_value(profile)
    key = RunSettings(impl=impl, only=tuple(only) if only else None, profile=profile, seed=seed,
                      manifest=Path(manifest) if manifest is not None else None)
    if key not in _CONFORMANCE:
        outcome = _run(replace(key, report_dir=Path(report_dir) if report_dir is not None else None))
        if outcome.report is None:
            raise ValueError(outcome.problem)
        _CONFORMANCE[key] = outcome.report
    return _CONFORMANCE[key]


def _check_profile_value(profile: str) -> None:
    try:
        _check_profile(profile, "profile")
    except pytest.UsageError as exc:
        raise ValueError(str(exc)) from None


__all__ = ["conformance", "ConformanceFailure", "InvariantItem", "LoomcheckFile", "LoomcheckWarning"]
