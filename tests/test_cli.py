"""The command line as a user meets it: the main job on the reference, plugging
in a kernel from outside the package, replay, and what happens with bad input
to the suite itself (never a traceback, always a report)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from junitparser import JUnitXml

from loomcheck.cli import main
from loomcheck.spec.catalogue import export_json, load_catalogue
from loomcheck.spec.regressions import committed_regressions

WRAPPER = textwrap.dedent('''
    """A kernel that lives outside the loomcheck package: here, the reference in disguise."""
    from loomcheck.reference.driver import ReferenceDriver

    class MyKernel(ReferenceDriver):
        name = "my-kernel"

    def make():
        return MyKernel(store="memory")
''')


ROOT = Path(__file__).resolve().parents[1]
REGENERATE_REPORTS = "run `.venv/bin/python -m loomcheck.reports.regenerate` from the repository root and commit the result"


def _report(directory: Path) -> dict:
    return json.loads((directory / "report.json").read_text())


def test_main_job_on_the_reference_through_the_installed_command(tmp_path: Path) -> None:
    """`loomcheck run` as the README gives it: table, exit 0, report.json and junit.xml."""
    done = subprocess.run([sys.executable, "-m", "loomcheck", "run", "--report", str(tmp_path)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    catalogue = load_catalogue()
    count = len(catalogue.invariants)
    hazards = {inv.id for inv in catalogue.invariants if inv.kind == "documented-hazard"}
    # R1a's residuals on the reference: its warm scan shows two; it rescans on a new definition.
    residuals = {"residual.truncate-after-clean-scan": "residual", "residual.recreated-log": "residual",
                 "residual.step-kind-between-feeds": "not-reproduced"}
    assert residuals.keys() == {inv.id for inv in catalogue.invariants if inv.kind == "documented-residual"}
    assert f"{count - len(hazards) - len(residuals)} passed, 0 failed" in done.stdout
    report = _report(tmp_path)
    assert report["complete"] is True
    assert {r["id"] for r in report["results"]} == set(catalogue.ids)
    for record in report["results"]:
        assert {"id", "adr", "status", "examples"} <= set(record)
        wanted = "hazard" if record["id"] in hazards else residuals.get(record["id"], "pass")
        assert record["status"] == wanted and record["examples"] > 0
    suites = list(JUnitXml.fromfile(str(tmp_path / "junit.xml")))
    assert sum(len(list(suite)) for suite in suites) == count
    # Real crashes: the reference, served in a process of its own on SQLite, killed at every
    # append of every operation of two flows and between operations, lost nothing.
    (sigkill,) = [c for c in report["corpora"] if c["name"] == "sigkill"]
    assert sigkill["violations"] == 0
    assert sigkill["perCategory"]["at an append inside an operation"] >= 20
    assert sigkill["perCategory"]["between operations"] >= 4

    # The same job through the other transport: the reference served over the driver
    # protocol (docs/protocol.md) gives the same report, invariant by invariant.
    # synchronous=NORMAL (docs/stores.md): this run checks the protocol, not a power loss, and the
    # default FULL syncs every append of the run (twice its time on a shared machine's disk).
    serve = "stdio:" + shlex.join([sys.executable, "-m", "loomcheck", "serve", "--impl", "reference:sqlite:normal"])
    over_stdio = subprocess.run([sys.executable, "-m", "loomcheck", "run", "--impl", serve, "--report",
                                 str(tmp_path / "stdio")], capture_output=True, text=True, timeout=900)
    assert over_stdio.returncode == 0, over_stdio.stdout + over_stdio.stderr
    stdio = _report(tmp_path / "stdio")
    assert (report["implementation"]["transport"], stdio["implementation"]["transport"]) == ("in-process", "stdio")
    assert stdio["complete"] is True
    same = lambda r: {x["id"]: (x["status"], x["examples"]) for x in r["results"]}  # noqa: E731
    assert same(stdio) == same(report)
    # The committed reports (docs/invariants.md shows them; tests/test_permuted.py compares with them)
    # are what this run gives, status by status.
    statuses = lambda r: {x["id"]: x["status"] for x in r["results"]}  # noqa: E731
    for name, fresh in (("reference", report), ("reference-stdio", stdio)):
        committed = json.loads((ROOT / "results" / name / "report.json").read_text(encoding="utf-8"))
        assert statuses(committed) == statuses(fresh), f"results/{name} is stale: {REGENERATE_REPORTS}"
    corpora = lambda r: [(c["name"], c["cases"], c["violations"], c["perCategory"]) for c in r["corpora"]]  # noqa: E731
    assert corpora(stdio) == corpora(report)
    assert stdio["stateMachineSteps"] == report["stateMachineSteps"]


def test_a_kernel_from_a_file_outside_the_package(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = tmp_path / "elsewhere" / "my_kernel.py"
    kernel.parent.mkdir()
    kernel.write_text(WRAPPER)
    code = main(["run", "--impl", f"python:{kernel}:make", "--only", "gate.", "--profile", "peers-slow",
                 "--report", str(tmp_path / "r")])
    assert code == 0, capsys.readouterr().out
    assert _report(tmp_path / "r")["implementation"]["name"] == "my-kernel"


def test_a_kernel_module_importable_from_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "their_kernel.py").write_text(WRAPPER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["run", "--impl", "python:their_kernel:make", "--only", "resume.", "--profile", "peers-slow",
                 "--report", "out"]) == 0
    assert (tmp_path / "out" / "report.json").is_file()


@pytest.mark.parametrize("label,path", committed_regressions(), ids=[log.name for _, log in committed_regressions()])
def test_every_committed_regression_replays_on_the_reference(label: str, path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", label, "--impl", "reference"]) == 0, capsys.readouterr().out


def test_catalogue_json_export_is_the_committed_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalogue", "--json"]) == 0
    assert capsys.readouterr().out == export_json(load_catalogue())


# -- bad input to the suite: a clear message, a finding, never a traceback ------------------
@pytest.mark.parametrize("impl,expected", [
    ("python:fakes.broken:factory_raises", "the factory raised RuntimeError: cannot connect to the kernel"),
    ("python:fakes.nowhere:make", "cannot import fakes.nowhere"),
    ("python:fakes.broken:no_such_factory", "has no callable 'no_such_factory'"),
])
def test_implementations_that_cannot_be_made_are_tool_errors(impl: str, expected: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A missing module or factory, or a factory that raises: one clear line and exit 3, not a table of errors."""
    code = main(["run", "--impl", impl, "--report", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 3, out
    assert expected in out and "Traceback" not in out
    assert len(out.strip().splitlines()) <= 3 and "examples" not in out, out  # no table


def test_an_unwritable_report_directory_is_a_tool_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-file").write_text("")
    code = main(["run", "--only", "gate.i-receives-entry-i", "--report", str(tmp_path / "a-file" / "report")])
    out = capsys.readouterr().out
    assert code == 3 and "cannot write there" in out and "Traceback" not in out, out
    assert len(out.strip().splitlines()) <= 2, out


@pytest.mark.parametrize("impl,expected", [
    ("python:fakes.broken:lying_hello", "hello"),
    ("python:fakes.broken:not_a_driver", "hello"),
])
def test_implementations_that_cannot_start_are_findings(impl: str, expected: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--impl", impl, "--report", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 2, out
    report = _report(tmp_path)
    assert report["complete"] is False
    assert any(expected in f["message"] for f in report["findings"]), report["findings"]
    assert all(r["status"] == "error" for r in report["results"])


@pytest.mark.parametrize("impl,expected", [
    ("python:fakes.broken:crashes_on_resume", "raised KeyError"),
    ("python:fakes.broken:garbage_log", "not a list of {seq, type, payload} events"),
    ("python:fakes.broken:not_an_outcome", "not an Outcome"),
])
def test_implementations_that_fail_mid_run_are_findings_with_a_script(impl: str, expected: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--impl", impl, "--only", "gate.", "resume.", "--profile", "peers-slow", "--report", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 2, out
    assert "Traceback" not in out
    report = _report(tmp_path)
    assert report["complete"] is True
    finding = next(f for f in report["findings"] if expected in f["message"])
    assert finding["counterexample"] and Path(finding["counterexample"]).is_file()
    # A driver exception is one finding for the example it ended; the invariants keep what the other
    # examples (and checks) judged, so they are not all turned into errors.
    assert "example(s) ended so" in finding["message"] or "regression logs" in finding["message"], finding
    assert any(r["status"] != "error" for r in report["results"]), report["results"]


def test_unknown_invariant_and_unknown_impl_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--only", "no.such-thing"]) == 3
    assert "matches no invariant" in capsys.readouterr().out
    # A typo is answered with the nearest ids, not the whole catalogue.
    assert main(["run", "--only", "gate.i-recieves-entry-i"]) == 3
    out = capsys.readouterr().out
    assert "did you mean gate.i-receives-entry-i" in out and "version.recorded" not in out, out
    assert main(["run", "--only", "nosuch.invariant"]) == 3
    assert len(capsys.readouterr().out.split(", ")) < 10  # a few suggestions at most
    assert main(["run", "--impl", "kernel-of-my-dreams"]) == 3
    assert "expected 'reference'" in capsys.readouterr().out


def test_a_broken_regression_file_is_a_spec_error_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "loomcheck-regression/1", "name": "x", "operations": [{"op": "teleport"}]}')
    assert main(["replay", str(broken)]) == 3
    out = capsys.readouterr().out
    assert "spec error" in out and "broken.json" in out and "Traceback" not in out


def test_the_command_runs_from_a_fresh_process_without_the_checkout_on_its_path(tmp_path: Path) -> None:
    """`import loomcheck` resolves to the installed package, and no generic top-level
    names (spec, fuzz, reference) are importable from site-packages."""
    code = "import loomcheck, importlib.util as u; print(all(u.find_spec(n) is None for n in ('spec', 'fuzz', 'reference', 'properties', 'harness', 'reports')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.stdout.strip() == "True", done.stdout + done.stderr


def test_replay_reports_no_violation_of_an_invariant_not_applicable(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel that never declared code-versions is not judged on version.pinned by `loomcheck replay`."""
    log = {"format": "loomcheck-regression/1", "name": "unpinned", "description": "a resume after a redefinition",
           "adr": "0056", "invariants": ["version.pinned"], "origin": "counterexample", "operations": [
               {"op": "define", "flow": "f0", "program": {"body": [{"op": "suspend", "on": "go1"}, {"op": "complete"}]}},
               {"op": "start", "execution": "x0", "flow": "f0", "input": None},
               {"op": "define", "flow": "f0", "program": {"body": [{"op": "complete"}]}},
               {"op": "resume", "execution": "x0", "type": "go1"}]}
    path = tmp_path / "unpinned.json"
    path.write_text(json.dumps(log))
    kernel = tmp_path / "unversioned.py"
    kernel.write_text("from mutants.unpinned_code import make as mutant\n\n"
                      "def make():\n    driver = mutant()\n    hello = driver.hello\n"
                      "    driver.hello = lambda: hello().model_copy(update={'features': [f for f in hello().features "
                      "if f != 'code-versions']})\n    return driver\n")
    assert main(["replay", str(path), "--impl", "python:mutants.unpinned_code:make"]) == 1
    assert "violated version.pinned" in capsys.readouterr().out
    assert main(["replay", str(path), "--impl", f"python:{kernel}:make"]) == 0  # a redefinition needs code-versions
    out = capsys.readouterr().out
    assert "not applicable: unpinned needs driver feature(s) code-versions" in out and "violated" not in out, out
    # A log the kernel can run still sets aside the invariants it names that do not apply to it.
    log["operations"] = [log["operations"][0], log["operations"][1], log["operations"][3]]
    path.write_text(json.dumps(log))
    assert main(["replay", str(path), "--impl", f"python:{kernel}:make"]) == 0
    out = capsys.readouterr().out
    assert "not applicable version.pinned" in out and "violated version.pinned" not in out, out
