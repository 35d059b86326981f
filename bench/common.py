"""What every benchmark section shares: the figure it reports and fair timing.

A section is a module with `measure(quick: bool) -> list[Figure]`. Timing runs
the two things a ratio compares in alternation and keeps each one's best round,
so a burst of load from another tenant of the machine hits both alike.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Figure:
    section: str           # "fold", "scanner", "stores", "suite", "explorer", "memory"
    name: str              # what was measured, in a few words
    value: str             # the figure as printed: "0.62x", "1.4x", "2,310/s"
    target: str = ""       # the target, as printed: ">= 0.50x"; empty when the figure is informational
    met: bool | None = None  # None: informational
    detail: str = ""       # the absolute numbers behind the ratio


def timed(fn: Callable[[], object], collector: bool = False) -> float:
    """Seconds for one call, collected first. The collector stays quiet during the call, so
    one round does not pay for another's garbage, unless `collector` (what a kernel pays too)."""
    gc.collect()
    enabled = gc.isenabled()
    if not collector:
        gc.disable()
    try:
        began = time.perf_counter()
        fn()
        return time.perf_counter() - began
    finally:
        if enabled:
            gc.enable()


def best_alternating(fns: list[Callable[[], object]], rounds: int, collector: bool = False) -> list[float]:
    """The best time of each function over `rounds`, running them in turn each round."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], timed(fn, collector))
    return best


def failed(section: str, name: str, detail: str) -> Figure:
    """A figure that could not be measured, and why."""
    return Figure(section, name, "failed", detail=detail[:500])


def guarded(section: str, name: str, measure_part: Callable[[], list[Figure]]) -> list[Figure]:
    """One part's figures, or one failed figure saying why, so the other parts still run."""
    try:
        return measure_part()
    except Exception as exc:  # noqa: BLE001 - a failed measurement is a figure, not a traceback
        return [failed(section, name, f"{type(exc).__name__}: {exc}")]


def ratio(value: float) -> str:
    return f"{value:.2f}x"


def per_second(count: float, seconds: float) -> str:
    return f"{count / seconds:,.0f}/s" if seconds > 0 else "n/a"


def mb(size: float) -> str:
    return f"{size / 2**20:,.1f} MB"


def show(figures: list[Figure]) -> None:
    """Plain lines, for running one section's module on its own (`python -m loomcheck.bench` draws the table)."""
    for figure in figures:
        verdict = "" if figure.met is None else ("  met" if figure.met else "  NOT MET")
        target = f"  target {figure.target}" if figure.target else ""
        print(f"[{figure.section}] {figure.name}: {figure.value}{target}{verdict}"
              + (f"\n    {figure.detail}" if figure.detail else ""))
