"""The plugin's pytest items: loomcheck.toml collected as a file of one item per selected
invariant, each passing, failing, skipping or xfailing as the session's run judged it
(docs/pytest.md#what-each-status-becomes)."""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

from loomcheck.pytest_plugin.session import RUNS, RunOutcome, run_once
from loomcheck.run.printed_commands import replay_command
from loomcheck.pytest_plugin.settings import RunSettings, SettingsError, expected_failures, read_settings

if TYPE_CHECKING:
    from loomcheck.reports.model import InvariantRecord, Report
    from loomcheck.spec.catalogue import Invariant

MARKER = "loomcheck"
DEMONSTRATED = ("hazard", "residual", "not-reproduced")


class LoomcheckFile(pytest.File):
    """loomcheck.toml: the invariants selected for the implementation it (or the command line) names."""

    def collect(self) -> Iterator[pytest.Item]:
        from loomcheck.run.state import select
        from loomcheck.spec.catalogue import load_catalogue

        try:
            settings = read_settings(self.path, self.config)
            if settings is None:
                return  # no implementation named: the conformance items are opt-in
            expected = expected_failures(settings)
        except SettingsError as exc:
            raise self.CollectError(str(exc)) from None
        try:
            selected = select(load_catalogue(), list(settings.only) if settings.only else None)
        except ValueError as exc:
            raise self.CollectError(f"{self.path}: {str(exc).replace('--only', 'only', 1)}") from None
        for invariant in selected:
            item = InvariantItem.from_parent(self, name=invariant.id, invariant=invariant, settings=settings)
            if invariant.id in expected:
                # An xfail that only the failure the manifest names satisfies: any other exception fails
                # the item, and a pass is an XPASS (the manifest is stale).
                item.add_marker(pytest.mark.xfail(reason=expected[invariant.id], raises=ExpectedByManifest, strict=False))
            yield item


class ConformanceFailure(Exception):
    """An invariant the implementation violated; `repr_failure` shows it without a traceback."""

    def __init__(self, record: InvariantRecord, report: Report) -> None:
        super().__init__(record.message or "violated")
        self.record = record
        self.report = report

    def describe(self) -> str:
        """The failure as `loomcheck run` explains it: the cited events with their roles, what the
        decision requires and its words; the root cause it belongs to; the counterexample and the
        command that replays it."""
        record, impl = self.record, self.report.implementation
        lines = [f"{record.id} (ADR {record.adr} {record.decision}): {record.title}",
                 f"{'violated' if record.status == 'fail' else record.status} by {impl.name} {impl.version}: "
                 f"{record.message or ''}"]
        if record.explanation is not None:
            lines += record.explanation.text.splitlines()[1:]  # its first line is the two above
        if record.rootCause is not None and record.rootCause != record.id:
            lines.append(f"the same root cause as {record.rootCause}: one counterexample violates both")
        if record.examplesToFailure:
            lines.append(f"first seen in example {record.examplesToFailure}, then shrunk")
        if record.counterexample:
            size = ""
            if record.counterexampleOperations is not None:
                size = f" ({record.counterexampleOperations} operations, {record.counterexampleEvents} events)"
            lines.append(f"counterexample{size}: {record.counterexample}")
            lines.append(f"replay: {replay_command(record.counterexample, impl.spec)}")
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
        if self.name in outcome.unjudged:  # the run stopped at -x or --maxfail before judging it
            _skip(f"not run: loomcheck {report.stopped}")
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

    def own_duration(self, report: pytest.TestReport) -> None:
        """The item's share of the run's time (run/state.py: `charged`), not the whole run's on the
        first item, whose setup ran it: junit.xml and --durations show each invariant's own."""
        runs = self.config.stash[RUNS]
        seconds = runs[self.settings].seconds.get(self.name, 0.0) if self.settings in runs else 0.0
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            report.duration = seconds
        elif report.when == "setup":
            report.duration = 0.0

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"loomcheck {self.name}"

    def _outcome(self) -> RunOutcome:
        runs = self.config.stash[RUNS]
        if self.settings not in runs:
            # Run what was selected, once: the items of this run that survived -k, --lf, --deselect.
            wanted = [item.name for item in self.session.items
                      if isinstance(item, InvariantItem) and item.settings == self.settings]
            report_dir = self.settings.report_dir or self._default_dir()
            maxfail = self.config.getoption("maxfail")  # -x is 1: the run stops when that many fail
            stop_after = max(1, maxfail - self.session.testsfailed) if maxfail else None
            runs[self.settings] = run_once(replace(self.settings, only=tuple(wanted), report_dir=report_dir),
                                           stop_after=stop_after)
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
