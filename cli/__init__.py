"""The `loomcheck` command: its entry point, `main`. The commands, their options and exit
codes: docs/cli.md."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rich.markup import escape

from loomcheck.cli.arguments import parser
from loomcheck.cli.console import make_console
from loomcheck.cli.run_command import SUITE_FAILED, run_command
from loomcheck.contract import interrupts
from loomcheck.run.loading import ImplementationSpecError
from loomcheck.spec.errors import SpecError

if TYPE_CHECKING:
    from loomcheck.reports.placeholder import Placeholder


def main(argv: list[str] | None = None, placeholder: Placeholder | None = None) -> int:
    """`placeholder`: the report `python -m loomcheck run` wrote before this module was imported
    (loomcheck/__main__.py); without one, `run` writes its own as soon as the command line is read."""
    ours = interrupts.install()  # a run stops by flag (contract/interrupts.py); __main__ installed them earlier
    try:
        try:
            args = parser().parse_args(argv)
        except SystemExit:  # argparse's own message and status; a placeholder for a run that never was goes
            if placeholder is not None:
                placeholder.withdraw()
            raise
        args.placeholder = _placeholder_for(args, placeholder) if args.command is run_command else None
        return _main(args)
    finally:
        if ours:
            interrupts.restore()


def _placeholder_for(args: argparse.Namespace, early: Placeholder | None) -> Placeholder | None:
    from loomcheck.reports.placeholder import begin

    if early is not None and early.matches(args.report, args.impl, args.profile):
        return early
    if early is not None:  # the full parser put the report elsewhere (an abbreviated option, say)
        early.withdraw()
    return begin(args.report, args.impl, args.profile)


def _main(args: argparse.Namespace) -> int:
    for stream in (sys.stdout, sys.stderr):  # a hostile name (a lone surrogate) is printed escaped, never a traceback
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    console = make_console()
    try:
        if args.command is not run_command:
            _ordinary_signals()
        return int(args.command(args, console))
    except SpecError as exc:
        console.print(f"[bold red]spec error[/]: {escape(str(exc))}", soft_wrap=True)  # one line, whatever the width
        return SUITE_FAILED
    except (ValueError, ImplementationSpecError) as exc:
        console.print(f"[bold red]error[/]: {escape(str(exc))}", soft_wrap=True)
        return SUITE_FAILED
    except KeyboardInterrupt:
        console.print("interrupted")
        return 2


def _ordinary_signals() -> None:
    """Commands other than run stop at once on Ctrl-C, as any program does; a signal the
    flag already holds (received while loomcheck was starting) stops them now."""
    interrupts.restore()
    if interrupts.requested() is not None:
        interrupts.clear()
        raise KeyboardInterrupt
