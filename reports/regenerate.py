"""Every committed output that loomcheck produces of itself, produced again by one command:

    .venv/bin/python -m loomcheck.reports.regenerate                  # from the repository root
    .venv/bin/python -m loomcheck.reports.regenerate --derived-only   # without running anything

runs the reference (in process and over the driver protocol) and the node example into
results/, then writes what derives from the committed reports: the invariant index, the catalogue
document that shows it (docs/invariants.md) and the conformance matrix beside the peers' reports.
The peers are not run again here (each needs its library and its own budget; docs/peers.md says
how). Tests check that the derived outputs are fresh (tests/test_invariant_index.py,
tests/test_docs.py), the reference's reports (tests/test_cli.py) and the node example's
(tests/test_node_adapter.py)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from loomcheck.reports.catalogue_doc import render_docs
from loomcheck.reports.html import render_matrix
from loomcheck.reports.invariant_index import build_index, dump_index
from loomcheck.reports.model import Report
from loomcheck.reports.reading import read_report
from loomcheck.reports.writers import write_atomically
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import committed_regressions

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
INDEX = ROOT / "spec" / "invariant-index.json"
DOC = ROOT / "docs" / "invariants.md"
MATRIX = RESULTS / "matrix.html"
# (folder under results/, --impl): each run as a user runs it, from the repository root. The served
# reference syncs with NORMAL, as the main-job test serves it: FULL waits on the disk at every append
# (docs/stores.md) and decides nothing a report shows.
RUNS = (
    ("reference", "reference"),
    ("reference-stdio", "stdio:loomcheck serve --impl reference:sqlite:normal"),
    ("node-example", "stdio:node examples/node/kernel.mjs"),
)
PEERS = ("langgraph", "langgraph-raw", "llamaindex", "dbos", "prefect", "prefect-raw")


def run_reports() -> list[Path]:
    """The report.json files the document shows: the reference through both transports, the example adapter."""
    return [RESULTS / name / "report.json" for name, _ in RUNS]


def peer_reports() -> list[Path]:
    return [RESULTS / "peers" / peer / "report.json" for peer in PEERS]


def derived_outputs() -> dict[Path, str]:
    """What the committed reports and the checkout give, file by file: pure of everything else."""
    catalogue = load_catalogue()
    runs = [(path, read_report(path)) for path in run_reports()]
    peers = [(path, read_report(path)) for path in peer_reports()]
    index = build_index(ROOT, catalogue, runs + peers)
    shown: list[Report] = [report for _, report in runs]
    doc = render_docs(catalogue, committed_regressions(), shown, index, DOC.parent.relative_to(ROOT).as_posix())
    return {INDEX: dump_index(index), DOC: doc, MATRIX: render_matrix(runs + peers, html_dir=MATRIX.parent)}


def loomcheck(*args: str) -> int:
    command = [sys.executable, "-m", "loomcheck", *args]
    print("$ loomcheck " + shlex.join(args), flush=True)
    # `loomcheck serve` in RUNS is the command a user types: the installed one, beside this Python.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(command, cwd=ROOT, env={**os.environ, "PATH": path}).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="regenerate loomcheck's committed outputs")
    parser.add_argument("--derived-only", action="store_true",
                        help="only what derives from the committed reports (index, docs/invariants.md, matrix)")
    args = parser.parse_args(argv)
    if not args.derived_only:
        for name, impl in RUNS:
            code = loomcheck("run", "--impl", impl, "--report", f"results/{name}")
            if code != 0:
                print(f"results/{name}: the run exited {code}; nothing after it was regenerated", file=sys.stderr)
                return code
            (RESULTS / name / "report.html").unlink(missing_ok=True)  # the matrix is the committed page
    for path, text in derived_outputs().items():
        write_atomically(path, text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
