"""The commands loomcheck prints for the user to run next (replay, repro, a reproducer), spelled to
run where they are printed: quoted for a POSIX shell, loomcheck and Python called as this shell
finds this installation, and a committed regression log named by the name loomcheck resolves
inside the package (docs/cli.md#commands-it-prints)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path, PurePath

from loomcheck.spec.regressions import committed_name


def python_program() -> str:
    """`python` when that name finds this interpreter, else this interpreter's path."""
    found = shutil.which("python")
    return "python" if found and os.path.abspath(found) == os.path.abspath(sys.executable) else sys.executable


def loomcheck_program() -> list[str]:
    """`loomcheck` when that name finds this installation's command; else the path the command was
    started by (`.venv/bin/loomcheck`, relative to where it ran); else `python -m loomcheck`."""
    here = Path(sys.executable).parent / "loomcheck"
    found = shutil.which("loomcheck")
    if found and here.is_file() and os.path.samefile(found, here):
        return ["loomcheck"]
    started = sys.argv[0] if sys.argv else ""
    if PurePath(started).name == "loomcheck" and Path(started).is_file():
        return [started]
    return [python_program(), "-m", "loomcheck"]


def log_argument(counterexample: str) -> str:
    """A counterexample as a command names it: a committed regression log by its name, found from
    any directory; any other file by its path."""
    return committed_name(counterexample) or counterexample


def replay_command(counterexample: str, impl: str) -> str:
    return shlex.join([*loomcheck_program(), "replay", log_argument(counterexample), "--impl", impl])


def repro_command(counterexample: str, impl: str) -> str:
    return shlex.join([*loomcheck_program(), "repro", log_argument(counterexample), "--impl", impl])


def run_reproducer(script: Path) -> str:
    """How to run a reproducer `loomcheck repro` wrote, from the directory it ran in."""
    return shlex.join(["sh", str(script)] if script.suffix == ".sh" else [python_program(), str(script)])


def from_report(counterexample: str, report_file: Path) -> str:
    """A counterexample as a report records it, found from where the report is now: a run writes
    them in counterexamples/ beside report.json, and a report folder moves as a whole (a CI
    artifact); a committed regression log keeps its name; any other path stays as recorded."""
    path = PurePath(counterexample)
    if committed_name(counterexample) is None and "counterexamples" in path.parts:
        index = len(path.parts) - 1 - path.parts[::-1].index("counterexamples")
        return str(report_file.parent.joinpath(*path.parts[index:]))
    return counterexample
