"""The peers' findings as standalone reproducers: each hand-written script under
results/peers/<peer>/repro/ shows one behaviour in the library's own API, with
only that library installed, and exits 1 while the library still behaves so.
A script that exits 0 means upstream changed: the test fails, saying to re-run
loomcheck on that peer and update its report, analysis and manifest. A peer with
no hand-written scripts (Prefect) is reproduced by the scripts `loomcheck repro`
generates from its counterexamples (tests/test_peer_scripts.py)."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).parents[1] / "results" / "peers"
LIBRARY = {"langgraph": "langgraph", "llamaindex": "workflows", "dbos": "dbos"}  # folder -> import
# Peers every one of whose committed findings has a hand-written reproducer here.
COMPLETE = ("langgraph", "langgraph-raw", "llamaindex", "dbos")
# Peers reproduced only by generated scripts: each finding needs a counterexample to generate one from.
GENERATED_ONLY = ("prefect", "prefect-raw")
# Run with loomcheck made unimportable: the script must need nothing of it.
RUNNER = ("import runpy, sys; sys.modules['loomcheck'] = None; sys.path.insert(0, sys.argv[1].rpartition('/')[0]); "
          "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def covers(script: Path) -> dict[str, tuple[str, ...]] | None:
    """The script's COVERS: report folder -> the failing invariants its behaviour explains."""
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COVERS" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


COVERS = {p: found for p in sorted(PEERS.glob("*/repro/*.py")) if (found := covers(p)) is not None}
SCRIPTS = list(COVERS)  # the helpers beside them (no COVERS) are not reproducers


@pytest.mark.parametrize("script", SCRIPTS, ids=[f"{p.parts[-3]}/{p.stem}" for p in SCRIPTS])
def test_the_reproducer_still_reproduces_with_only_the_library(script: Path) -> None:
    library = LIBRARY[script.parts[-3]]
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed (pip install 'loomcheck[{script.parts[-3]}]')")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(script)], capture_output=True, text=True, timeout=300)
    assert "expected:" in done.stdout and "happened:" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr  # a crash (say, importing loomcheck) is not a reproduction
    assert done.returncode == 1, (
        f"{script.name} no longer reproduces (exit {done.returncode}): upstream changed this behaviour. Re-run loomcheck "
        f"on {script.parts[-3]} and update results/peers/, its ANALYSIS.md and peers/manifests/.\n{done.stdout}")


@pytest.mark.parametrize("report", COMPLETE)
def test_every_finding_of_the_peer_has_a_reproducer(report: str) -> None:
    results = json.loads((PEERS / report / "report.json").read_text())["results"]
    failing = {r["id"] for r in results if r["status"] in ("fail", "error")}
    covered = {invariant for found in COVERS.values() for invariant in found.get(report, ())}
    assert failing, f"{report} has no failing invariant: is the report stale?"
    assert not failing - covered, f"{report}: findings with no reproducer: {sorted(failing - covered)}"
    assert not covered - failing, f"{report}: reproducers claim findings the report does not have: {sorted(covered - failing)}"


@pytest.mark.parametrize("report", GENERATED_ONLY)
def test_every_finding_of_a_generated_only_peer_has_a_counterexample(report: str) -> None:
    """`loomcheck repro` writes the reproducer from the finding's counterexample, so each must have one on disk."""
    results = json.loads((PEERS / report / "report.json").read_text())["results"]
    failing = [r for r in results if r["status"] in ("fail", "error")]
    assert failing, f"{report} has no failing invariant: is the report stale?"
    root = PEERS.parents[1]
    missing = [r["id"] for r in failing if not r.get("counterexample") or not (root / r["counterexample"]).is_file()]
    assert not missing, f"{report}: findings with no counterexample to generate a reproducer from: {missing}"
