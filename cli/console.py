"""The terminal's building blocks: the console (a fixed readable width when stdout is not a
terminal), a record's status cell, an explanation and a failure as printed, and progress (a live
bar on a terminal, a line per phase and at most one a minute in a log)."""

from __future__ import annotations

import os
import time
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from loomcheck.reports.model import InvariantRecord
from loomcheck.run.printed_commands import replay_command

DEMONSTRATED = ("hazard", "residual", "not-reproduced")  # a documented hazard's or residual's outcomes
STYLE = {"pass": "green", "fail": "bold red", "not-applicable": "dim", "error": "yellow", "hazard": "magenta",
         "residual": "magenta", "not-reproduced": "magenta"}
LOG_WIDTH = 100  # columns when stdout is a file or a pipe (a CI log) and COLUMNS does not say
LOG_PROGRESS_EVERY = 60.0  # seconds between two progress lines of one phase in a log
QUIET, NORMAL, VERBOSE = -1, 0, 1


def make_console() -> Console:
    """The console commands print to: on a terminal, its width; in a log, COLUMNS or LOG_WIDTH,
    wide enough for the tables never to cut a status."""
    console = Console(highlight=False)
    if console.is_terminal or "COLUMNS" in os.environ:
        return console
    return Console(highlight=False, width=LOG_WIDTH)


def status_cell(record: InvariantRecord) -> str:
    cell = f"[{STYLE[record.status]}]{record.status}[/]"
    if record.disagrees:  # a choice the ADRs leave open, not a violation of one (spec/profiles.toml)
        return f"[yellow]profile[/] ({record.profile})"
    if record.manifest == "expected-failure":
        return f"[dim]{record.status} (expected)[/]"
    if record.manifest == "unexpected-pass":
        return f"{cell} [bold yellow](unexpected)[/]"
    if record.manifest == "still-failing-differently" and record.expected is not None:
        return f"{cell} (expected {record.expected.status})"
    return cell


def print_explanation(console: Console, label: str, text: str) -> None:
    """An explanation (properties/explain.py) under its label, its lines after the first indented."""
    first, *rest = text.splitlines()
    console.print(f"{label} {escape(first)}")
    for line in rest:
        console.print(f"  {escape(line)}")


def print_failure(console: Console, record: InvariantRecord, impl: str, label: str, counterexample: str | None) -> None:
    """A failure or error: its explanation (or message), and the command that replays it."""
    if record.explanation is not None:
        print_explanation(console, label, record.explanation.text)
    else:
        console.print(f"{label} {record.id} (ADR {record.adr} {record.decision}): {escape(record.message or '')}")
    if record.examplesToFailure:
        console.print(f"    first seen in example {record.examplesToFailure}, then shrunk")
    if counterexample:
        size = f"{record.counterexampleOperations} operations, {record.counterexampleEvents} events"
        console.print(f"    counterexample ({size}): {escape(counterexample)}", soft_wrap=True)
        console.print(f"    replay: {escape(replay_command(counterexample, impl))}", soft_wrap=True)


def progress_bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description:<16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True, disable=not console.is_terminal)


class RunProgress:
    """A run's progress, (phase, done, total) at a time: on a terminal a live bar per phase that
    leaves nothing behind; in a log a line when a phase begins and at most one a minute while it
    runs, so a CI log shows where the run is as it goes; nothing at all when `silent`."""

    def __init__(self, console: Console, silent: bool = False) -> None:
        self.console = console
        self.live = console.is_terminal
        self.silent = silent
        self.bar = progress_bar(console)
        self.tasks: dict[str, TaskID] = {}
        self.began = time.monotonic()
        self.phase: str | None = None
        self.said = 0.0

    def __enter__(self) -> RunProgress:
        if self.live:
            self.bar.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self.live:
            self.bar.__exit__(kind, value, traceback)

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.live:
            if phase not in self.tasks:
                self.tasks[phase] = self.bar.add_task(phase, total=total)
            self.bar.update(self.tasks[phase], completed=done, total=total)
            return
        now = time.monotonic()
        if self.silent or (phase == self.phase and now - self.said < LOG_PROGRESS_EVERY):
            return
        self.phase, self.said = phase, now
        elapsed = int(now - self.began)
        self.console.print(f"[{elapsed // 60}:{elapsed % 60:02d}] {escape(phase)} {done}/{total}")
