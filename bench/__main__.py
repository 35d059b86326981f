"""`python -m loomcheck.bench`: every benchmark section, one table of ratios and targets.

    python -m loomcheck.bench                 # all sections, full sizes (a few minutes)
    python -m loomcheck.bench --quick         # small sizes, no whole-suite runs (under a minute or two)
    python -m loomcheck.bench fold scanner    # only these sections
    python -m loomcheck.bench --json out.json # also write the figures as JSON

Exit status: 0 when every target is met, 1 when one is not, 2 when a section failed to run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from dataclasses import asdict
from datetime import date

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loomcheck.bench.common import Figure, guarded

SECTIONS = ("fold", "scanner", "stores", "suite", "memory")  # module names; suite also reports the explorer
LOG_WIDTH = 100  # columns when stdout is not a terminal and COLUMNS does not say


def run_section(name: str, quick: bool, console: Console) -> list[Figure]:
    """One section's figures; a section that raises becomes a failed figure, never a traceback."""
    began = time.perf_counter()
    with console.status(f"measuring {name} ..."):
        # The report must survive one broken section.
        figures = guarded(name, "the section", lambda: importlib.import_module(f"loomcheck.bench.{name}").measure(quick))
    console.print(f"[dim]{name}: {time.perf_counter() - began:.0f} s[/dim]")
    return figures


def machine() -> str:
    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.machine()}"


def table(figures: list[Figure]) -> Table:
    """One row per figure, and what is behind it on a dim row of its own under the figure's name:
    the numbers never wrap, so the table reads the same on a terminal and in a log."""
    grid = Table(title=f"loomcheck benchmarks, {date.today().isoformat()} ({machine()})", title_justify="left",
                 box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    grid.add_column("section", no_wrap=True)
    grid.add_column("figure (and what is behind it)")
    for column in ("measured", "target", ""):
        grid.add_column(column, no_wrap=True)
    for f in figures:
        verdict = "" if f.met is None else "[green]met[/green]" if f.met else "[red]not met[/red]"
        if f.value == "failed":
            verdict = "[red]failed[/red]"
        grid.add_row(f.section, f.name, f.value, f.target, verdict)
        if f.detail:
            grid.add_row("", f"[dim]{escape(f.detail)}[/dim]", "", "", "")
    return grid


def console() -> Console:
    """A terminal's width; in a log (stdout a file or a pipe), COLUMNS or LOG_WIDTH."""
    made = Console()
    return made if made.is_terminal or "COLUMNS" in os.environ else Console(width=LOG_WIDTH)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loomcheck.bench", description=__doc__.split("\n")[0])
    parser.add_argument("sections", nargs="*", choices=[[], *SECTIONS], help="default: all")
    parser.add_argument("--quick", action="store_true", help="small sizes and no whole-suite runs")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    out = console()
    figures: list[Figure] = []
    for name in args.sections or SECTIONS:
        figures += run_section(name, args.quick, out)
    out.print(table(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"date": date.today().isoformat(), "machine": machine(), "quick": args.quick,
                       "figures": [asdict(f) for f in figures]}, out, indent=2)
    if any(f.value == "failed" for f in figures):
        return 2
    return 1 if any(f.met is False for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
