"""An implementation's manifest: the failures it is known to have, the driver features to
treat as undeclared and the invariants it sets aside; read, applied to a report, and written
anew from a run. The file's format: docs/cli.md#manifests."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from loomcheck.peers import peer_manifest
from loomcheck.reports.model import Expected, ManifestVerdict, Report, Status
from loomcheck.spec.catalogue import FEATURES, Catalogue, load_catalogue
from loomcheck.spec.errors import SpecError
from loomcheck.spec.files import read_toml

TODO = "TODO: why"
HEADER = ("# loomcheck manifest: the failures this implementation is known to have, and the driver\n"
          "# features to treat as undeclared. `loomcheck run --manifest FILE` applies it;\n"
          "# `--write-manifest FILE` rewrites it from a run (reasons kept; replace each TODO).\n")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Features(_Model):
    unsupported: list[Literal[FEATURES]] = []
    reason: str | None = None


class ExpectedEntry(Expected):
    invariant: str
    status: Literal["fail", "error"] = "fail"  # the common case may go unsaid


class NotApplicableEntry(_Model):
    """An invariant whose subject the kernel's model does not have (a peer library
    with no gate names, say): reported not-applicable with this reason, never run."""

    invariant: str
    reason: str = Field(min_length=1)


class Manifest(_Model):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    implementation: str | None = None
    features: Features = Features()
    not_applicable: list[NotApplicableEntry] = Field(default=[], alias="not-applicable")
    expected: list[ExpectedEntry] = []

    @model_validator(mode="after")
    def _one_entry_per_invariant(self) -> Manifest:
        seen: set[str] = set()
        for entry in self.expected:
            if entry.invariant in seen:
                raise ValueError(f"invariant '{entry.invariant}' has more than one [[expected]] entry")
            seen.add(entry.invariant)
        for entry in self.not_applicable:
            if entry.invariant in seen:
                raise ValueError(f"invariant '{entry.invariant}' is both expected to fail and not applicable")
        return self

    @property
    def unsupported(self) -> list[str]:
        return list(self.features.unsupported)

    def expectation(self, invariant_id: str) -> ExpectedEntry | None:
        return next((e for e in self.expected if e.invariant == invariant_id), None)

    def not_applicable_reason(self, invariant_id: str) -> str | None:
        return next((e.reason for e in self.not_applicable if e.invariant == invariant_id), None)


# -- reading -------------------------------------------------------------------------
def load_manifest(path: Path, catalogue: Catalogue | None = None) -> Manifest:
    """The manifest at `path`, checked against the catalogue. Anything wrong
    raises SpecError naming the file, the entry and what is wrong."""
    label = str(path)
    raw = read_toml(path, label)
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        raise SpecError("\n".join(_describe(label, problem, raw) for problem in exc.errors())) from None
    _check(label, manifest, catalogue or load_catalogue())
    return manifest


def shipped_manifest(impl: str, catalogue: Catalogue | None = None) -> Manifest | None:
    """The manifest a peer adapter ships (`--impl langgraph`), read; None for any other implementation."""
    path = peer_manifest(impl)
    return load_manifest(path, catalogue) if path is not None else None


def _describe(label: str, problem: Any, raw: dict[str, Any]) -> str:
    loc = list(problem["loc"])
    where = ""
    if len(loc) >= 2 and loc[0] == "expected" and isinstance(loc[1], int):
        entries = raw.get("expected")
        entry = entries[loc[1]] if isinstance(entries, list) and loc[1] < len(entries) else None
        named = entry.get("invariant") if isinstance(entry, dict) else None
        where = f"[[expected]] #{loc[1] + 1}" + (f" ('{named}')" if isinstance(named, str) else "") + ", "
        loc = loc[2:]
    field = ".".join(str(part) for part in loc)
    return f"{label}: {where}{f'field {field!r}: ' if field else ''}{problem['msg']}"


def _check(label: str, manifest: Manifest, catalogue: Catalogue) -> None:
    problems = []

    def unknown(where: str, invariant_id: str) -> bool:
        if invariant_id in catalogue.ids:
            return False
        close = difflib.get_close_matches(invariant_id, catalogue.ids, n=1)
        hint = f"did you mean '{close[0]}'?" if close else "`loomcheck catalogue` lists them"
        problems.append(f"{where}: unknown invariant '{invariant_id}'; {hint}")
        return True

    for number, entry in enumerate(manifest.not_applicable, start=1):
        unknown(f"{label}: [[not-applicable]] #{number}", entry.invariant)
    for number, entry in enumerate(manifest.expected, start=1):
        where = f"{label}: [[expected]] #{number}"
        if unknown(where, entry.invariant):
            continue
        invariant = catalogue.get(entry.invariant)
        # A documented hazard or residual is demonstrated, never failed: only an error can be expected of it.
        if entry.status == "fail" and invariant.kind in ("documented-hazard", "documented-residual"):
            problems.append(f"{where}: '{entry.invariant}' is a {invariant.kind.replace('-', ' ')}, demonstrated "
                            f"and never failed; only status = \"error\" can be expected of it")
    if problems:
        raise SpecError("\n".join(problems))


# -- applying ------------------------------------------------------------------------
def verdict(status: Status, expected: Expected) -> ManifestVerdict | None:
    if status == "pass":
        return "unexpected-pass"
    if status == expected.status:
        return "expected-failure"
    if status in ("fail", "error"):
        return "still-failing-differently"
    return None  # not applicable, or a demonstration: the manifest has nothing to say about it


def apply_manifest(report: Report, manifest: Manifest) -> None:
    """Annotate every record the manifest names, list the unexpected passes and
    recount. Applying twice (or another manifest) replaces earlier annotations."""
    for record in report.results:
        entry = manifest.expectation(record.id)
        record.expected = Expected(status=entry.status, reason=entry.reason, link=entry.link) if entry else None
        record.manifest = verdict(record.status, entry) if entry else None
    report.unexpectedPasses = [r.id for r in report.results if r.manifest == "unexpected-pass"]
    report.summarise()


# -- writing -------------------------------------------------------------------------
def updated_manifest(report: Report, old: Manifest | None = None) -> Manifest:
    """The manifest this run calls for: every failure and error expected (the old
    reason kept, TODO for a new one), entries that now pass dropped, and entries
    this run did not judge (not run, not applicable, a demonstration) kept."""
    old = old or Manifest()
    ran = {record.id: record for record in report.results}
    entries = []
    for record in report.results:
        if record.status in ("fail", "error"):
            before = old.expectation(record.id)
            entries.append(ExpectedEntry(invariant=record.id, status=record.status,  # type: ignore[arg-type]
                                         reason=before.reason if before else TODO,
                                         link=before.link if before else None))
    entries += [e for e in old.expected if e.invariant not in ran or ran[e.invariant].status not in ("pass", "fail", "error")]
    order = {invariant_id: index for index, invariant_id in enumerate(load_catalogue().ids)}
    entries.sort(key=lambda e: order.get(e.invariant, len(order)))
    # The name is informational: the file's own is kept, the run's fills a gap.
    name = old.implementation or (report.implementation.name if report.implementation.name != "unknown" else None)
    return Manifest(implementation=name, features=old.features, not_applicable=old.not_applicable, expected=entries)


def dump_manifest(manifest: Manifest) -> str:
    data: dict[str, Any] = {}
    if manifest.implementation is not None:
        data["implementation"] = manifest.implementation
    features: dict[str, Any] = {"unsupported": list(manifest.features.unsupported)}
    if manifest.features.reason is not None:
        features["reason"] = manifest.features.reason
    data["features"] = features
    if manifest.not_applicable:
        data["not-applicable"] = [{"invariant": e.invariant, "reason": e.reason} for e in manifest.not_applicable]
    # Written in a fixed key order, and without the keys that are absent (TOML has no null).
    data["expected"] = [{key: value for key, value in (("invariant", e.invariant), ("status", e.status),
                                                       ("reason", e.reason), ("link", e.link)) if value is not None}
                        for e in manifest.expected]
    return HEADER + tomli_w.dumps(data)
