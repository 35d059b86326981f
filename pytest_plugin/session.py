"""The run behind a pytest session's conformance items, made once per settings through the
runner (which applies the manifest itself, as for `loomcheck run`), and `conformance()`, the
same report for a plain test (docs/pytest.md)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import pytest

from loomcheck.pytest_plugin.settings import RunSettings, check_profile

if TYPE_CHECKING:
    from loomcheck.reports.model import Report


@dataclass
class RunOutcome:
    report: Report | None = None
    problem: str | None = None  # the run could not be made at all
    report_dir: Path | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # each invariant's share of the run's time
    unjudged: frozenset[str] = frozenset()  # left with checks not run: the run stopped at enough failures


RUNS = pytest.StashKey[dict[RunSettings, RunOutcome]]()


def run_once(settings: RunSettings, stop_after: int | None = None) -> RunOutcome:
    """One run into `settings.report_dir`; a run that cannot be made is an outcome too, so a
    session asks once, not once per item. `stop_after`: stop the run once that many invariants
    fail (pytest's -x and --maxfail), leaving the rest unjudged."""
    from loomcheck.run.manifest import load_manifest
    from loomcheck.run.runner import Run
    from loomcheck.spec.catalogue import load_catalogue
    from loomcheck.spec.errors import SpecError

    report_dir = settings.report_dir or Path(tempfile.mkdtemp(prefix="loomcheck-"))
    try:
        manifest = load_manifest(settings.manifest) if settings.manifest is not None else None
        run = Run(settings.impl, load_catalogue(), profile=settings.profile,
                  only=list(settings.only) if settings.only else None, report_dir=report_dir, seed=settings.seed,
                  manifest=manifest, stop_after=stop_after)
        report = run.execute()
    except (ValueError, SpecError) as exc:
        return RunOutcome(problem=str(exc), report_dir=report_dir)
    except Exception as exc:  # noqa: BLE001 - a defect of the suite: reported on every item, not retried
        return RunOutcome(problem=f"{type(exc).__name__}: {exc}", report_dir=report_dir)
    return RunOutcome(report=report, report_dir=report_dir, seconds=dict(run.seconds), unjudged=frozenset(run.unjudged))


_CONFORMANCE: dict[RunSettings, Report] = {}


def conformance(impl: str, *, only: Sequence[str] | None = None, profile: str = "ci", seed: int | None = None,
                report_dir: Path | str | None = None, manifest: Path | str | None = None) -> Report:
    """The report of the catalogue run against `impl`, for a plain test (docs/pytest.md): run once
    per process for the same implementation and selection (the same Report object is returned);
    `report_dir` (default: a new temporary folder) is where the first call writes report.json and
    the counterexamples. Raises ValueError for a bad implementation spec, profile or selection."""
    from loomcheck.run.loading import ImplementationSpecError, check_spec

    try:
        check_spec(impl)
    except ImplementationSpecError as exc:
        raise ValueError(str(exc)) from None
    check_profile(profile, "profile")
    key = RunSettings(impl=impl, only=tuple(only) if only else None, profile=profile, seed=seed,
                      manifest=Path(manifest) if manifest is not None else None)
    if key not in _CONFORMANCE:
        outcome = run_once(replace(key, report_dir=Path(report_dir) if report_dir is not None else None))
        if outcome.report is None:
            raise ValueError(outcome.problem)
        _CONFORMANCE[key] = outcome.report
    return _CONFORMANCE[key]
