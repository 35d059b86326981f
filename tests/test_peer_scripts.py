"""`loomcheck repro --impl <peer>` writes a script in the peer's own API
(peers/scripts/). For every committed finding of a peer whose adapter has a
translation: the script runs with loomcheck unimportable, reproduces (exit 1), and
its log of every execution is the adapter's, event for event, with the same
outcomes. That last check is what keeps a translation from drifting away from
the adapter it transcribes."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest


PEERS = Path(__file__).parents[1] / "results" / "peers"
# report folder -> (the --impl that produced it, the library it needs)
TRANSLATED = {"langgraph": ("langgraph", "langgraph"), "langgraph-raw": ("langgraph-raw", "langgraph"),
              "llamaindex": ("llamaindex", "workflows"), "dbos": ("dbos", "dbos"),
              # Not installed in CI (a server of its own, slow): run in a venv with '.[prefect]'.
              "prefect": ("prefect", "prefect"), "prefect-raw": ("prefect-raw", "prefect")}
RUNNER = ("import runpy, sys; sys.modules['loomcheck'] = None; "
          "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
ROOT = PEERS.parents[1]


def counterexamples(report: str) -> list[Path]:
    """The report's shrunk counterexamples, and the committed regression logs its failures cite."""
    results = json.loads((PEERS / report / "report.json").read_text())["results"]
    cited = {ROOT / r["counterexample"] for r in results if r["status"] in ("fail", "error") and r.get("counterexample")}
    return sorted(set((PEERS / report / "counterexamples").glob("*.json")) | cited)


CASES = [(report, log) for report in TRANSLATED for log in counterexamples(report)]


def constants(script: Path) -> dict[str, object]:
    """The script's top-level literal assignments (FOUND_OUTCOMES, FOUND_LOGS, EVIDENCE, ...)."""
    found = {}
    for node in ast.parse(script.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return found


def repro(log: Path, impl: str, out: Path) -> Path:
    """`loomcheck repro` in a process of its own, as a user runs it: the adapter's run must not
    see what earlier tests left in this process (a patched module, say)."""
    done = subprocess.run([sys.executable, "-m", "loomcheck", "repro", str(log), "--impl", impl, "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "repro.py"


def run_script(script: Path, seen: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUNNER, str(script), str(seen)], capture_output=True, text=True,
                          timeout=300, cwd=script.parent)


@pytest.mark.parametrize("report,log", CASES, ids=[f"{r}/{p.stem}" for r, p in CASES])
def test_the_peer_script_reproduces_what_the_adapter_saw(report: str, log: Path, tmp_path: Path) -> None:
    impl, library = TRANSLATED[report]
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    script = repro(log, impl, tmp_path)
    source = script.read_text(encoding="utf-8")
    assert "loomcheck" not in "".join(line for line in source.splitlines() if line.startswith(("import", "from")))
    done = run_script(script, tmp_path / "seen.json")
    assert "Traceback" not in done.stderr, done.stderr
    assert "expected:" in done.stdout and "happened:" in done.stdout, done.stdout
    assert done.returncode == 1, f"the {report} script does not reproduce {log.name}:\n{done.stdout}"
    seen = json.loads((tmp_path / "seen.json").read_text())
    found = constants(script)
    assert seen["outcomes"] == found["FOUND_OUTCOMES"]
    if found["FOUND_LOGS"] is not None:  # None: the adapter raised and its logs were not read
        assert seen["logs"] == found["FOUND_LOGS"], "the script's log drifted from the adapter's"


def test_a_script_whose_cited_events_are_gone_says_it_no_longer_reproduces(tmp_path: Path) -> None:
    """The judgement itself: change what the cited event was, and the same run no longer matches it."""
    if importlib.util.find_spec("langgraph") is None:
        pytest.skip("langgraph is not installed")
    log = PEERS / "langgraph-raw" / "counterexamples" / "gate.i-receives-entry-i.json"
    script = repro(log, "langgraph-raw", tmp_path)
    source = script.read_text(encoding="utf-8")
    evidence = constants(script)["EVIDENCE"]
    assert evidence, "this finding cites the observation of the gate"
    tampered = [[execution, {**event, "seq": event["seq"] + 100}] for execution, event in evidence]
    script.write_text(source.replace(f"EVIDENCE = {evidence!r}", f"EVIDENCE = {tampered!r}"), encoding="utf-8")
    done = run_script(script, tmp_path / "seen.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "happened: no longer: the cited events are gone" in done.stdout


def test_a_script_without_evidence_compares_outcomes_and_logs(tmp_path: Path) -> None:
    if importlib.util.find_spec("langgraph") is None:
        pytest.skip("langgraph is not installed")
    log = PEERS / "langgraph-raw" / "counterexamples" / "implementation-error.json"
    script = repro(log, "langgraph-raw", tmp_path)
    found = constants(script)
    assert found["EVIDENCE"] == [], "LangGraph raising is explained by its exception, which cites no event"
    assert found["FOUND_OUTCOMES"][-1].startswith("raised:")
    source = script.read_text(encoding="utf-8")
    changed = [*found["FOUND_OUTCOMES"][:-1], "ok"]
    script.write_text(source.replace(f"FOUND_OUTCOMES = {found['FOUND_OUTCOMES']!r}", f"FOUND_OUTCOMES = {changed!r}"),
                      encoding="utf-8")
    done = run_script(script, tmp_path / "seen.json")
    assert done.returncode == 0 and "differ from when it was found" in done.stdout, done.stdout + done.stderr
