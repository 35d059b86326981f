"""Every committed output that loomcheck produces of itself, produced again by one command:

    .venv/bin/python -m loomcheck.reports.regenerate                  # from the repository root
    .venv/bin/python -m loomcheck.reports.regenerate --derived-only   # without running anything
    .venv/bin/python -m loomcheck.reports.regenerate --peers [NAME …] # the peers too (their extras)

runs the reference (in process and over the driver protocol) and the node example into results/
(with --peers, each peer named, or every peer, on its own profile into results/peers/), then writes
what derives from the committed reports: the invariant index, docs/invariants.md, the matrix and
the peers' table in README.md and results/peers/README.md, and the run figures in each peer's
ANALYSIS.md (reports/run_figures.py). Tests check each is fresh."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

from loomcheck.peers import PEERS
from loomcheck.reports.catalogue_doc import render_docs
from loomcheck.reports.html import render_matrix
from loomcheck.reports.invariant_index import build_index, dump_index
from loomcheck.reports.model import Report
from loomcheck.reports.peer_table import peer_rows, with_table
from loomcheck.reports.run_figures import MARKERS, with_figures
from loomcheck.reports.reading import read_report
from loomcheck.reports.writers import write_atomically
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import committed_regressions

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
INDEX = ROOT / "spec" / "invariant-index.json"
DOC = ROOT / "docs" / "invariants.md"
MATRIX = RESULTS / "matrix.html"
README = ROOT / "README.md"
PEERS_README = RESULTS / "peers" / "README.md"
# (folder under results/, --impl): each run as a user runs it, from the repository root. The served
# reference syncs with NORMAL, as the main-job test serves it: FULL waits on the disk at every append
# (docs/stores.md) and decides nothing a report shows.
RUNS = (
    ("reference", "reference"),
    ("reference-stdio", "stdio:loomcheck serve --impl reference:sqlite:normal"),
    ("node-example", "stdio:node examples/node/kernel.mjs"),
)


def run_reports() -> list[Path]:
    """The report.json files the document shows: the reference through both transports, the example adapter."""
    return [RESULTS / name / "report.json" for name, _ in RUNS]


def peer_reports() -> list[Path]:
    """Every peer run committed under results/peers/, in the order of the PEERS table."""
    return [path for peer in PEERS if (path := RESULTS / "peers" / peer / "report.json").exists()]


def derived_outputs() -> dict[Path, str]:
    """What the committed reports and the checkout give, file by file: pure of everything else."""
    catalogue = load_catalogue()
    runs = [(path, read_report(path)) for path in run_reports()]
    peers = [(path, read_report(path)) for path in peer_reports()]
    index = build_index(ROOT, catalogue, runs + peers)
    shown: list[Report] = [report for _, report in runs]
    doc = render_docs(catalogue, committed_regressions(), shown, index, DOC.parent.relative_to(ROOT).as_posix())
    named = [(path.parent.name, report) for path, report in peers]
    tables = {document: with_table(document.read_text(encoding="utf-8"), peer_rows(named, prefix), document)
              for document, prefix in ((README, "results/peers/"), (PEERS_README, ""))}
    by_name = dict(named)
    analyses = {path: with_figures(text, by_name, path) for path in sorted((RESULTS / "peers").glob("*/ANALYSIS.md"))
                if MARKERS.search(text := path.read_text(encoding="utf-8"))}
    return {INDEX: dump_index(index), DOC: doc, MATRIX: render_matrix(runs + peers, html_dir=MATRIX.parent),
            **tables, **analyses}


def loomcheck(*args: str) -> int:
    command = [sys.executable, "-m", "loomcheck", *args]
    print("$ loomcheck " + shlex.join(args), flush=True)
    # `loomcheck serve` in RUNS is the command a user types: the installed one, beside this Python.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(command, cwd=ROOT, env={**os.environ, "PATH": path}).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="regenerate loomcheck's committed outputs")
    parser.add_argument("--derived-only", action="store_true",
                        help="only what derives from the committed reports (index, docs/invariants.md, matrix, "
                             "the peers' table)")
    parser.add_argument("--peers", nargs="*", metavar="NAME", choices=sorted(PEERS),
                        help="also run these peers (all of them when none is named), each on its own profile")
    args = parser.parse_args(argv)
    runs = [] if args.derived_only else [(f"results/{name}", ("--impl", impl)) for name, impl in RUNS]
    if args.peers is not None:
        runs += [(f"results/peers/{name}", ("--impl", name, "--profile", PEERS[name].profile))
                 for name in (args.peers or PEERS)]
    for folder, impl in runs:
        code = loomcheck("run", *impl, "--report", folder)
        if code not in (0, 1) or (code == 1 and not folder.startswith("results/peers/")):
            # A peer fails invariants by nature (its manifest says which); anything else stops here.
            print(f"{folder}: the run exited {code}; nothing after it was regenerated", file=sys.stderr)
            return code
        (ROOT / folder / "report.html").unlink(missing_ok=True)  # the matrix is the committed page
    for path, text in derived_outputs().items():
        write_atomically(path, text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
