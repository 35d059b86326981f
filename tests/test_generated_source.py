"""No code injection through the source `loomcheck repro` writes (run/repro.py and every
peer translation in adapters/scripts/). An execution id, a flow, step or gate name, an
invariant or an explanation is the counterexample's data: in a comment, a docstring or a
string it must stay data. For each hostile value the script must compile, be valid UTF-8,
hold the value as a literal, and have the same syntax tree as the script for a benign value
once every literal is blanked out; the shell reproducer is run, and must not run what the
value says."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loomcheck.peers.dbos.template import DbosScript
from loomcheck.peers.langgraph.template import LangGraphScript
from loomcheck.peers.llamaindex.template import LlamaIndexScript
from loomcheck.peers.prefect.template import PrefectScript
from loomcheck.run.repro import Finding, peer_script, python_script, shell_script
from loomcheck.contract.script import Define, Operation, Resume, Start
from loomcheck.properties.explain import Evidence, Explanation
from loomcheck.spec.regressions import RegressionLog

BENIGN = "x1"
HOSTILE = [
    "x\rimport os; os._exit(7) #", "x\nimport os; os._exit(7) #", "x\r\nimport os; os._exit(7) #",
    "x\u2028import os; os._exit(7) #", "x\u2029import os", "x\x85import os", "x\x0cimport os", "x\x0bimport os",
    "x\x00import os", "\ud800", "x\udfff\ud800y", "\u202eevil", "'", '"', '"""', "'''", '"""; import os; """',
    "x\\", "x\\\nimport os", '\\"""', "x\"", "'); import os; os._exit(7) #",
    "x\ntouch CANARY", "$(touch CANARY)", "`touch CANARY`", "'; touch CANARY; '",
]
TRANSLATIONS = [LangGraphScript(guarded=True), LangGraphScript(guarded=False), LlamaIndexScript(), DbosScript(),
                PrefectScript(guarded=True), PrefectScript(guarded=False)]


def counterexample(name: str) -> tuple[RegressionLog, list[Operation], Finding]:
    """One counterexample with `name` in every place a counterexample's text reaches a script."""
    valid = name.encode("utf-8", "replace").decode("utf-8")  # a flow program's names are checked for UTF-8
    program = {"language": "loomcheck-flow/1",
               "body": [{"op": "step", "id": valid, "output": name}, {"op": "suspend", "on": valid}, {"op": "observe"},
                        {"op": "emit", "type": valid, "payload": {name: name}}, {"op": "complete", "output": name}]}
    operations: list[Operation] = [Define(name, program), Start(name, name, name), Resume(name, name, {name: name})]
    log = RegressionLog.model_validate({
        "name": "hostile", "description": name, "adr": "0104", "invariants": [name, name], "origin": "counterexample",
        "operations": [{"op": "start", "execution": name, "flow": name}]})
    events = [{"seq": 1, "type": name, "payload": {name: name}}]
    why = Explanation(invariant=name, adr="0104", decision=name, title=name, claim=name,
                      evidence=(Evidence(1, name, name, name, name, name),), rule=name, expected=name)
    finding = Finding(why, ["ok", "ok", name], ["ok", "ok", "ok"], [name], {name: events})
    return log, operations, finding


def generated(kind: Any, name: str) -> str:
    log, operations, finding = counterexample(name)
    if kind == "python":
        return python_script(log, "reference:memory", operations, finding)
    return peer_script(kind, log, operations, finding)


def blanked(tree: ast.Module) -> str:
    """The syntax tree with every literal's value blanked: what the script does, not what it says."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant):
            node.value = None
    return ast.dump(tree)


def literals(tree: ast.Module) -> set[Any]:
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}


@pytest.mark.parametrize("kind", ["python", *TRANSLATIONS],
                         ids=["repro.py", *(f"{t.peer.split(' (')[0]}{'' if getattr(t, 'guarded', True) else '-raw'}"
                                           for t in TRANSLATIONS)])
def test_a_hostile_name_stays_data_in_the_generated_python(kind: Any) -> None:
    benign = blanked(ast.parse(generated(kind, BENIGN)))
    for name in HOSTILE:
        source = generated(kind, name)
        source.encode("utf-8")  # a lone surrogate is written as its escape, not as itself
        compile(source, "repro.py", "exec")
        tree = ast.parse(source)
        docstring = ast.get_docstring(tree, clean=False) or ""
        assert docstring.startswith(f"Reproduces {name} ("), f"the docstring does not say {name!r}"
        assert name in literals(tree), f"{name!r} is not in the script as itself"
        same = blanked(tree) == benign
        assert same, f"{name!r} changed what the script does"


@pytest.mark.skipif(shutil.which("sh") is None, reason="a POSIX shell script")
def test_a_hostile_name_stays_data_in_the_generated_shell_script(tmp_path: Path) -> None:
    for number, name in enumerate(HOSTILE):
        log, _, finding = counterexample(name)
        here = tmp_path / str(number)
        here.mkdir()
        (here / "requests-1.jsonl").write_text('{"op":"hello"}\n')
        (here / "answers-1.jsonl").write_text('{"op":"hello"}\n')
        script = here / "repro.sh"
        script.write_text(shell_script("cat", log, finding, 1), encoding="utf-8")
        done = subprocess.run(["sh", str(script)], capture_output=True, timeout=30, cwd=here)
        assert not (here / "CANARY").exists(), f"{name!r} ran as a command"
        assert done.returncode == 1 and b"it reproduces" in done.stdout, (name, done.stdout, done.stderr)
        assert done.stderr == b"", (name, done.stderr)


def test_a_hostile_module_name_stays_data_in_the_import() -> None:
    """The implementation's own name (--impl python:MODULE:FACTORY) is written as a literal too."""
    log, operations, finding = counterexample(BENIGN)
    benign = blanked(ast.parse(python_script(log, "python:kernel-one:make", operations, finding)))
    for name in ["k\rimport os", "k; import os #", "k\u2028import os", "\ud800"]:
        source = python_script(log, f"python:{name}:make{name}", operations, finding)
        source.encode("utf-8")
        tree = ast.parse(source)
        assert {name, "make" + name} <= literals(tree)
        same = blanked(tree) == benign
        assert same, f"{name!r} changed what the script does"
