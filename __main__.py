"""`python -m loomcheck` and the `loomcheck` command: the signal handlers first, then (for
`loomcheck run`) a placeholder report, and only then the rest of loomcheck, whose imports
take the better part of half a second (contract/interrupts.py, reports/placeholder.py)."""

from __future__ import annotations

import sys


def main() -> int:
    from loomcheck.contract import interrupts
    interrupts.install()
    from loomcheck.reports import placeholder

    early = placeholder.from_argv(sys.argv[1:])
    from loomcheck.cli import main as command_line

    return command_line(placeholder=early)


if __name__ == "__main__":
    raise SystemExit(main())
