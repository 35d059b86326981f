"""The catalogue as a document a person reads (`loomcheck docs`): every
invariant grouped by ADR, with its statement, where it comes from, how it is
checked, a committed regression log that demonstrates it, its status in the
reports given and, from the repository's invariant index, links to what judges
and shows it.

The output is a pure function of the catalogue, the regression logs, the index and
the stable part of each report: no timestamps, wall times or example counts (they
change on every run), and paths inside the package are shown relative to it,
so a committed copy (docs/invariants.md) goes stale only when something a
reader would care about changed."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from loomcheck.contract.script import describe, from_model
from loomcheck.contract.jsonvalues import show
from loomcheck.reports.invariant_index import Entry, InvariantIndex, Place
from loomcheck.reports.model import InvariantRecord, Report
from loomcheck.spec.catalogue import ADRS, Catalogue, Invariant
from loomcheck.spec.regressions import LoadModel, RegressionLog

# The package ships no ADR titles (the decision records live outside it), so an
# ADR section is headed by its number and the decisions the catalogue cites.
KIND_LABELS = {
    "invariant": "invariant",
    "differential": "differential (compared with the reference kernel)",
    "documented-hazard": "documented hazard (demonstrated, never passed)",
    "documented-residual": "documented residual (demonstrated, never passed)",
}
CHECK_LABELS = {
    "stateful": "stateful (the Hypothesis state machine)",
    "regressions": "regressions (committed regression logs)",
}
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
PAYLOAD_LIMIT = 100


def render_docs(catalogue: Catalogue, regressions: Sequence[tuple[str, RegressionLog]],
                reports: Sequence[Report], index: InvariantIndex | None = None, base: str = "docs") -> str:
    """Markdown for the whole catalogue; `regressions` as `committed_regressions()` gives them.
    With the repository's `index`, each invariant links what judges and shows it, relative to
    `base` (the document's folder in the repository)."""
    by_adr = {adr: [inv for inv in catalogue.invariants if inv.adr == adr] for adr in ADRS}
    lines = ["# The loomcheck invariant catalogue", ""]
    lines += _generated_note(catalogue, regressions, reports, index is not None)
    lines += ["## Contents", ""]
    for adr, invariants in by_adr.items():
        if not invariants:
            continue
        lines.append(f"- [ADR {adr}](#adr-{adr})")
        lines += [f"  - [{inv.id}](#{inv.id}): {_inline(inv.title)}" for inv in invariants]
    lines.append("")
    for adr, invariants in by_adr.items():
        if invariants:
            lines += _adr_section(adr, invariants, regressions, reports, index, base)
    return "\n".join(lines).rstrip("\n") + "\n"


# -- header ----------------------------------------------------------------------------
def _generated_note(catalogue: Catalogue, regressions: Sequence[tuple[str, RegressionLog]],
                    reports: Sequence[Report], indexed: bool) -> list[str]:
    sources = (f"the {len(catalogue.invariants)} invariants of the catalogue (`spec/invariants/*.toml`) "
               f"and the {len(regressions)} committed regression logs (`spec/regressions/`)")
    if indexed:
        sources += (", the links of the invariant index (`spec/invariant-index.json`: what judges each invariant, "
                    "what shows it, the mutants it catches, the reference code of its decision)")
    if reports:
        sources += f", with the status each has in {_count(len(reports), 'report')} listed below"
    command = ("python -m loomcheck.reports.regenerate --derived-only" if indexed
               else "loomcheck docs --report REPORT.json --out FILE")
    lines = [f"Generated from {sources}; regenerate it rather than edit it (`{command}`).", ""]
    for report in reports:
        summary = report.summary
        hazards = f", {summary.hazards} demonstrations" if summary.hazards else ""
        state = "" if report.complete else ", incomplete"
        lines.append(f"- {_implementation(report)}: loomcheck {report.suiteVersion}, profile {report.profile}"
                     + (f", seed {report.seed}" if report.seed is not None else "")
                     + f"; {summary.passed} passed, {summary.failed} failed, {summary.notApplicable} not applicable, "
                       f"{summary.errors} errors{hazards}{state}.")
    if not reports:
        return lines
    lines += ["", "Statuses: `pass`; `fail` (violated, with a counterexample); `not-applicable` (the implementation "
              "lacks a driver feature or an EVENT_SCHEMA version the invariant needs); `error` (the implementation "
              "or the run failed); for documented hazards and residuals, `hazard` or `residual` when the "
              "demonstration showed it and `not-reproduced` when it did not (neither is a pass).", ""]
    return lines


def _implementation(report: Report) -> str:
    impl = report.implementation
    return f"{impl.name} {impl.version}" + (f" (EVENT_SCHEMA {impl.eventSchema})" if impl.eventSchema else "")


# -- sections --------------------------------------------------------------------------
def _adr_section(adr: str, invariants: list[Invariant], regressions: Sequence[tuple[str, RegressionLog]],
                 reports: Sequence[Report], index: InvariantIndex | None, base: str) -> list[str]:
    decisions = list(dict.fromkeys(inv.decision for inv in invariants))
    lines = [f"## ADR {adr}", "",
             f"Decisions cited: {', '.join(decisions)}. {_count(len(invariants), 'invariant')}.", ""]
    for inv in invariants:
        entry = index.invariants.get(inv.id) if index is not None else None
        lines += _invariant_section(inv, regressions, reports, entry, base)
    return lines


def _invariant_section(inv: Invariant, regressions: Sequence[tuple[str, RegressionLog]],
                       reports: Sequence[Report], entry: Entry | None, base: str) -> list[str]:
    # An explicit anchor: the id itself, whatever a renderer makes of the dots in a heading.
    lines = [f'<a id="{inv.id}"></a>', "", f"### {inv.id}: {_inline(inv.title)}", "", _inline(inv.statement), ""]
    requires = ", ".join(inv.requires) if inv.requires else "none (every driver)"
    lines += [f"- **ADR**: {inv.adr}, {_inline(inv.decision)}",
              f"- **Kind**: {KIND_LABELS.get(inv.kind, inv.kind)}",
              f"- **Since**: EVENT_SCHEMA {inv.since}",
              f"- **Checks**: {', '.join(CHECK_LABELS.get(check, check) for check in inv.checks)}",
              f"- **Requires driver features**: {requires}"]
    if entry is not None:
        lines += _links(inv, entry, base)
    lines.append("")
    if inv.quote:
        lines += [f"> ADR {inv.adr} ({_inline(inv.decision)}): “{_inline(inv.quote)}”", ""]
    if inv.notes:
        lines += [f"Notes: {_inline(inv.notes)}", ""]
    naming = [(label, log) for label, log in regressions if inv.id in log.invariants]
    if naming:
        lines += _example(inv, naming)
    if reports:
        lines += _status_table(inv, reports)
    return lines


def _example(inv: Invariant, naming: list[tuple[str, RegressionLog]]) -> list[str]:
    # What reads best: a log of the invariant's own ADR, run live rather than loaded from a
    # prepared history, the shorter the better; names break ties.
    label, log = min(naming, key=lambda pair: (pair[1].adr != inv.adr,
                                               any(isinstance(op, LoadModel) for op in pair[1].operations),
                                               len(pair[1].operations), pair[1].name))
    lines = [f"Example regression log `{_regression_path(label)}`: {_inline(log.description)}", ""]
    outcomes = log.expect.outcomes if log.expect is not None else []
    steps = []
    for number, model in enumerate(log.operations, start=1):
        outcome = f" -> {outcomes[number - 1]}" if number <= len(outcomes) else ""
        steps.append(f"{number:>2}. {describe(from_model(model))}{outcome}")
    lines += _code_block(steps)
    if log.expect is not None:
        for execution, events in log.expect.logs.items():
            lines.append(f"Expected log of `{execution}`:")
            lines.append("")
            lines += _code_block([f"#{event.seq} {event.type} {show(event.payload, PAYLOAD_LIMIT)}" for event in events])
    others = [other.name for other_label, other in naming if other_label != label]
    if others:
        lines += [f"Also named by: {', '.join(f'`{name}`' for name in others)}.", ""]
    return lines


def _status_table(inv: Invariant, reports: Sequence[Report]) -> list[str]:
    lines = ["Status:", "", "| implementation | status | message | counterexample |", "| --- | --- | --- | --- |"]
    for report in reports:
        record = _record(report, inv.id)
        if record is None:
            lines.append(f"| {_cell(_implementation(report))} | not run | | |")
            continue
        counterexample = f"`{_cell(_shown_path(record.counterexample))}`" if record.counterexample else ""
        lines.append(f"| {_cell(_implementation(report))} | {record.status} | {_cell(_shown_text(record.message or ''))} "
                     f"| {counterexample} |")
    return lines + [""]


# -- links (the invariant index) ------------------------------------------------------
def _links(inv: Invariant, entry: Entry, base: str) -> list[str]:
    judges = [f"{judge.check} {_link(judge.place, base)}" for judge in entry.judges]
    examples = [_link(Place(file=file), base, Path(file).stem) for file in entry.regressions]
    found = [_link(Place(file=c.file), base, Path(c.run).name + ("" if c.file.startswith(f"{c.run}/") else
                                                                 f" ({Path(c.file).stem})"))
             for c in entry.counterexamples]
    mutants = [_link(Place(file=m.file), base, m.name) for m in entry.mutants]
    code = [_link(place, base, _shown_place(place).removeprefix("reference/")) for place in entry.reference]
    return [f"- **Judged by**: {'; '.join(judges) or 'no check yet'}",
            f"- **Regression logs**: {', '.join(examples) or 'none'}",
            f"- **Counterexamples in the committed runs**: {', '.join(found) or 'none'}",
            f"- **Seeded mutants it catches**: {', '.join(mutants) or 'none'}",
            f"- **Reference code tagged ADR {inv.adr} {_inline(inv.decision)}**: {', '.join(code) or 'none tagged'}"]


def _link(place: Place, base: str, label: str | None = None) -> str:
    """A Markdown link from the document's folder to `place` (GitHub's #L anchor for a line)."""
    target = quote(posixpath.relpath(place.file, base)) + (f"#L{place.line}" if place.line is not None else "")
    return f"[{label or _shown_place(place)}]({target})"


def _shown_place(place: Place) -> str:
    return place.file + (f":{place.line}" if place.line is not None else "")


def _record(report: Report, invariant_id: str) -> InvariantRecord | None:
    return next((record for record in report.results if record.id == invariant_id), None)


# -- text helpers ----------------------------------------------------------------------
def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _inline(text: str) -> str:
    """One paragraph: TOML strings may hold line breaks a Markdown list item would not survive."""
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _code_block(lines: list[str]) -> list[str]:
    # A fence longer than any run of backticks inside, so a payload cannot close it.
    longest = max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *lines, fence, ""]


def _regression_path(label: str) -> str:
    return f"spec/regressions/{Path(label).name}"


def _shown_path(path: str) -> str:
    """A committed log by its place in the package, a file inside it relative to it; any
    other path as the report gives it (the same report must render the same anywhere)."""
    posix = Path(path).as_posix()
    if "spec/regressions/" in posix:
        return "spec/regressions/" + posix.rsplit("spec/regressions/", 1)[1]
    if not Path(path).is_absolute():
        return posix
    try:
        return Path(path).resolve().relative_to(PACKAGE_ROOT).as_posix()
    except ValueError:
        return posix


def _shown_text(message: str) -> str:
    return message.replace(f"{PACKAGE_ROOT.as_posix()}/", "")
