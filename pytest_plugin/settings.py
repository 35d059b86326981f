"""The plugin's settings: the keys of loomcheck.toml, the `--loomcheck-*` options that override
them, and what one run is made of (docs/pytest.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

ENTRY_FILE = "loomcheck.toml"


class SettingsError(Exception):
    """loomcheck.toml, or an option, asks for something the plugin cannot do (the message says what)."""


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


def read_settings(path: Path, config: pytest.Config) -> RunSettings | None:
    """The run loomcheck.toml at `path` asks for, the command line's options first; None when no
    implementation is named (the conformance items are opt-in)."""
    from loomcheck.run.loading import ImplementationSpecError, check_spec

    given = _file_settings(path)
    here, cli_dir = path.parent, config.invocation_params.dir
    impl = config.getoption("loomcheck_impl") or (relative_impl(given.impl, here) if given.impl else None)
    if impl is None:
        return None
    try:
        check_spec(impl)
    except ImplementationSpecError as exc:
        raise SettingsError(f"{path}: impl: {exc}") from None
    profile = config.getoption("loomcheck_profile") or given.profile or "ci"
    if config.getoption("loomcheck_profile") is None and given.profile is not None:
        try:
            check_profile(given.profile, "profile")
        except ValueError as exc:
            raise SettingsError(f"{path}: {exc}") from None
    only = config.getoption("loomcheck_only") or given.only
    report = config.getoption("loomcheck_report")
    report_dir = cli_dir / report if report else (here / given.report if given.report else None)
    manifest_option = config.getoption("loomcheck_manifest")
    manifest = cli_dir / manifest_option if manifest_option else (here / given.manifest if given.manifest else None)
    return RunSettings(impl=impl, only=tuple(only) if only else None, profile=profile, seed=given.seed,
                       report_dir=report_dir, manifest=manifest)


def _file_settings(path: Path) -> FileSettings:
    from loomcheck.spec.errors import SpecError
    from loomcheck.spec.files import read_toml

    try:
        return FileSettings.model_validate(read_toml(path, str(path)))
    except SpecError as exc:
        raise SettingsError(str(exc)) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors())
        raise SettingsError(f"{path}: {problems}") from None


def expected_failures(settings: RunSettings) -> dict[str, str]:
    """invariant id -> the xfail reason, for every invariant the manifest expects to fail."""
    if settings.manifest is None:
        return {}
    from loomcheck.run.manifest import load_manifest
    from loomcheck.spec.errors import SpecError

    try:
        manifest = load_manifest(settings.manifest)
    except SpecError as exc:
        raise SettingsError(str(exc)) from None
    return {entry.invariant: f"expected {entry.status} (manifest): {entry.reason}" for entry in manifest.expected}


def relative_impl(spec: str, here: Path) -> str:
    """A kernel file named in loomcheck.toml is found beside the file, not beside the cwd."""
    if spec.startswith("python:"):
        target, _, factory = spec[len("python:"):].rpartition(":")
        if target.endswith(".py") and not Path(target).is_absolute():
            return f"python:{here / target}:{factory}"
    return spec


def check_profile(profile: str, where: str) -> None:
    """ValueError for a profile the state machine does not have."""
    from loomcheck.machine.state_machine import PROFILES

    if profile not in PROFILES:
        raise ValueError(f"{where} {profile!r}: choose one of {', '.join(PROFILES)}")
