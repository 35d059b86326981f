"""The tables `loomcheck run` prints: the counts per ADR, the per-invariant table (-v) and the
explorer's table (-v). Statuses and numbers never wrap or shrink; on a narrow terminal the text
columns (ids, decisions, scenario names) wrap instead, so a status is never cut to "not…"."""

from __future__ import annotations

from rich import box
from rich.table import Table

from loomcheck.cli.console import DEMONSTRATED, status_cell
from loomcheck.reports.model import InvariantRecord, Report

ADR_COLUMNS = ("passed", "failed", "errors", "not applicable", "demonstrated")


def _table(title: str | None = None) -> Table:
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False,
                 show_edge=False)


def _column(record: InvariantRecord) -> str:
    """The column of the counts per ADR a record is counted in (as report.json's summary counts it)."""
    if record.disagrees:
        return "profile"
    if record.status in DEMONSTRATED:
        return "demonstrated"
    return {"pass": "passed", "fail": "failed", "error": "errors", "not-applicable": "not applicable"}[record.status]


def adr_table(report: Report) -> Table:
    """One row per ADR: how many of its invariants passed, failed, erred, do not apply, or were
    demonstrated; a column of profile disagreements only when there are some."""
    counts: dict[str, dict[str, int]] = {}
    for record in report.results:
        row = counts.setdefault(record.adr, {})
        row[_column(record)] = row.get(_column(record), 0) + 1
    columns = [*ADR_COLUMNS, *(["profile"] if any("profile" in row for row in counts.values()) else [])]
    table = _table()
    table.add_column("ADR", no_wrap=True)
    table.add_column("invariants", justify="right", no_wrap=True)
    for name in columns:
        table.add_column(name, justify="right", no_wrap=True)
    for adr in sorted(counts):
        row = counts[adr]
        cells = [_count(name, row.get(name, 0)) for name in columns]
        table.add_row(adr, str(sum(row.values())), *cells)
    return table


def _count(column: str, count: int) -> str:
    if count == 0:
        return "[dim]0[/]"
    style = {"failed": "bold red", "errors": "yellow", "passed": "green"}.get(column)
    return f"[{style}]{count}[/]" if style else str(count)


def invariant_table(report: Report) -> Table:
    """Every invariant: id, ADR and decision, status, examples run (-v)."""
    table = _table()
    table.add_column("invariant", no_wrap=True)
    table.add_column("ADR", min_width=7, overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("examples", justify="right", no_wrap=True)
    for record in report.results:
        table.add_row(record.id, f"{record.adr} {record.decision}", status_cell(record), str(record.examples))
    return table


def exploration_table(report: Report) -> Table:
    """The explorer's numbers, one row per scenario: how deep every history was checked (-v; the
    operations replayed are in report.json and summary.md)."""
    table = _table("bounded exhaustive exploration (exhausted: every history of every length)")
    table.add_column("scenario", no_wrap=True)
    for name in ("depth", "status", "transitions", "distinct", "seconds", "per s"):
        table.add_column(name, justify="left" if name == "status" else "right", no_wrap=True)
    for row in report.exploration:
        status = {"exhausted": "[green]exhausted[/]", "bounded": "[green]complete[/]",
                  "unknown": "[yellow]unknown beyond[/]", "failed": "[red]failed[/]"}[row.status]
        rate = f"{row.transitions / row.seconds:.0f}" if row.seconds else "-"
        table.add_row(row.scenario, f"{row.depthComplete}/{row.depthTarget}", status, str(row.transitions),
                      str(row.distinctStates), f"{row.seconds:.1f}", rate)
    return table
