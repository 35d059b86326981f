"""Every committed output that loomcheck produces of itself, produced again by one command:

    .venv/bin/python -m loomcheck.reports.regenerate          # from the repository root

the reference's reports (in process and over the driver protocol), the node example's, the
catalogue document that shows them, and the conformance matrix beside the peers' reports. The
peers' reports are not run again here (each needs its library and its own budget; docs/peers.md
says how); the matrix reads what is committed. Tests check that the outputs are fresh
(tests/test_cli.py, tests/test_docs.py, tests/test_node_adapter.py)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "reports"
# (report directory, --impl): each run as a user runs it, from the repository root. The served
# reference syncs with NORMAL, as the main-job test serves it: FULL waits on the disk at every append
# (docs/stores.md) and decides nothing a report shows.
RUNS = (
    ("reference", "reference"),
    ("reference-stdio", "stdio:loomcheck serve --impl reference:sqlite:normal"),
    ("node-example", "stdio:node examples/node/kernel.mjs"),
)
PEERS = ("langgraph", "langgraph-raw", "llamaindex", "dbos", "prefect", "prefect-raw")


def loomcheck(*args: str) -> int:
    command = [sys.executable, "-m", "loomcheck", *args]
    print("$ loomcheck " + shlex.join(args), flush=True)
    # `loomcheck serve` in RUNS is the command a user types: the installed one, beside this Python.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(command, cwd=ROOT, env={**os.environ, "PATH": path}).returncode


def main() -> int:
    for name, impl in RUNS:
        code = loomcheck("run", "--impl", impl, "--report", f"reports/{name}")
        if code != 0:
            print(f"reports/{name}: the run exited {code}; nothing after it was regenerated", file=sys.stderr)
            return code
        (REPORTS / name / "report.html").unlink(missing_ok=True)  # the matrix is the committed page
    shown = [arg for name, _ in RUNS for arg in ("--report", f"reports/{name}/report.json")]
    if loomcheck("docs", *shown, "--out", "docs/invariants.md") != 0:
        return 1
    columns = [f"reports/{name}/report.json" for name, _ in RUNS] + \
              [f"reports/peers/{peer}/report.json" for peer in PEERS]
    return loomcheck("matrix", *columns, "--out", "reports/matrix.html")


if __name__ == "__main__":
    raise SystemExit(main())
