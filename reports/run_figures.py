"""A committed run's figures, written into the analysis that discusses it: the counts, the wall
time and each failure with what the manifest says of it, all read from the run's report.json,
so an analysis cannot quote a run it no longer matches. An analysis asks for them with a pair of
markers naming the run (a folder of results/peers/)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from loomcheck.reports.model import Report

MARKERS = re.compile(r"(<!-- run-figures (?P<name>[\w.-]+): generated from its report\.json by "
                     r"`python -m loomcheck\.reports\.regenerate`; do not edit -->\n)(?P<body>.*?)"
                     r"(<!-- /run-figures -->)", re.S)


def begin_marker(name: str) -> str:
    return (f"<!-- run-figures {name}: generated from its report.json by "
            f"`python -m loomcheck.reports.regenerate`; do not edit -->")


def figures(report: Report) -> str:
    """The run in a paragraph and a table of its failures (Markdown)."""
    s = report.summary
    who = report.implementation
    unexpected = s.failed + s.errors - s.expectedFailures
    partial = "" if report.complete else f" **Partial run** (stopped: {report.stopped})."
    lines = [f"Run: **{who.name} {who.version}**, profile `{report.profile}`, started {report.started[:10]}, "
             f"{report.wallSeconds:.0f} s wall. **{s.passed} passed, {s.failed} failed, {s.errors} errors** "
             f"({s.expectedFailures} expected by the manifest, {unexpected} not), {s.notApplicable} not applicable; "
             f"{s.rootCauses} root causes.{partial}{_exploration(report)}{_unexpected_passes(report)}"]
    failing = [r for r in report.results if r.status in ("fail", "error")]
    if failing:
        lines += ["", "| invariant | decision | status | manifest | root cause |", "| --- | --- | --- | --- | --- |"]
        lines += [f"| `{r.id}` | ADR {r.adr} {r.decision} | {r.status} | {r.manifest or 'not expected'} | "
                  f"{'`' + r.rootCause + '`' if r.rootCause else ''} |" for r in failing]
    return "\n".join(lines)


def _exploration(report: Report) -> str:
    rows = report.exploration
    if not rows:
        return ""
    short = [r.scenario for r in rows if r.status == "unknown"]
    if not short:
        return f" Exploration: {len(rows)} scenarios, none left unknown at the profile's depths."
    return (f" Exploration: {len(short)} of {len(rows)} scenarios left unknown beyond the depth reached "
            f"({', '.join(short)}).")


def _unexpected_passes(report: Report) -> str:
    if not report.unexpectedPasses:
        return ""
    return " Unexpected passes: " + ", ".join(f"`{i}`" for i in report.unexpectedPasses) + "."


def with_figures(document: str, reports: Mapping[str, Report], where: Path) -> str:
    """`document` with every run-figures block refilled from the named run's report."""
    def refill(found: re.Match[str]) -> str:
        name = found["name"]
        if name not in reports:
            raise ValueError(f"{where}: run-figures names {name!r}, which has no committed report under "
                             f"results/peers/")
        return f"{found.group(1)}{figures(reports[name])}\n{found.group(4)}"
    return MARKERS.sub(refill, document)
