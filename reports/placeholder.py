"""The report a run writes before anything slow (the imports, the catalogue, the
implementation's module and factory), so that a run stopped in its first second
still leaves a valid one: complete false, and why it stopped. The run's own report
replaces it as soon as the implementation has said hello (run/runner.py).

Standard library only: `python -m loomcheck run` writes it before it imports the
rest of loomcheck (loomcheck/__main__.py). A run refused before it starts (a bad
argument, exit 3) leaves nothing behind: what the placeholder created is removed
and a report it replaced is put back."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import tempfile
from pathlib import Path

from loomcheck import __version__

DEFAULT_DIR = Path("loomcheck-report")  # `loomcheck run --report`'s default (cli/arguments.py)
NOT_STARTED = "the run ended before its first check (while loading the catalogue and the implementation)"
INTERRUPTED = "interrupted"  # the runner's own word for the user's SIGINT or SIGTERM


def minimal_report(spec: str, profile: str, stopped: str) -> dict[str, object]:
    """The fewest fields of a valid loomcheck-report/1 (spec/schemas/report.schema.json)."""
    return {"format": "loomcheck-report/1", "suite": "loomcheck", "suiteVersion": __version__,
            "implementation": {"spec": spec}, "profile": profile,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "complete": False, "stopped": stopped}


class Placeholder:
    """A minimal report.json in `directory`, written now; `withdraw()` undoes it."""

    def __init__(self, directory: Path, spec: str, profile: str) -> None:
        self.directory = directory
        self.spec, self.profile = spec, profile
        self.path = directory / "report.json"
        self.created: list[Path] = [p for p in [directory, *directory.parents] if not p.exists()]
        self.previous = self.path.read_bytes() if self.path.is_file() else None
        self.write(NOT_STARTED)

    def write(self, stopped: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        text = json.dumps(minimal_report(self.spec, self.profile, stopped), separators=(",", ":")) + "\n"  # as write_json
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".report.json.")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, self.path)

    def interrupted(self) -> None:
        """The user's signal came before the run began: the report says so."""
        self.write(INTERRUPTED)

    def withdraw(self) -> None:
        """Leave the directory as it was: the report it held, or nothing."""
        try:
            if self.previous is not None:
                self.path.write_bytes(self.previous)
            else:
                self.path.unlink(missing_ok=True)
            for created in self.created:  # deepest first
                created.rmdir()
        except OSError:
            pass  # something else is in there now: not ours to remove

    def matches(self, directory: Path, spec: str, profile: str) -> bool:
        return (Path(os.path.abspath(directory)), spec, profile) == (Path(os.path.abspath(self.directory)),
                                                                     self.spec, self.profile)


def begin(directory: Path, spec: str, profile: str) -> Placeholder | None:
    """A placeholder, or None where none can be written (the run's own check says why, exit 3)."""
    try:
        return Placeholder(directory, spec, profile)
    except OSError:
        return None


def from_argv(argv: list[str]) -> Placeholder | None:
    """For `loomcheck run`, before the command line is parsed for real: a placeholder where
    `--report DIR` (exactly so spelled, or its default) puts the report. cli.main compares it
    with what the full parser found and moves it if they differ."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("command", nargs="?")
    for option, default in (("--report", str(DEFAULT_DIR)), ("--impl", "reference"), ("--profile", "ci")):
        parser.add_argument(option, default=default)
    try:
        known, _ = parser.parse_known_args(argv)
    except SystemExit:  # a command line the full parser will refuse, with its own message
        return None
    if known.command != "run" or "-h" in argv or "--help" in argv:
        return None
    return begin(Path(known.report), known.impl, known.profile)
