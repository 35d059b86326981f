"""Every counterexample a run finds keeps its file: several implementation errors in one run
(the explorer finding a peer that raises on two different operations, say) are not written
over one another, and the same failure found twice is written once."""

from __future__ import annotations

from pathlib import Path

from loomcheck.run.runner import Run
from loomcheck.contract.script import Define, Resume, Start
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import load_regression

FLOW = Define("f", {"body": [{"op": "suspend", "on": "go1"}, {"op": "complete"}]})


def test_two_implementation_errors_keep_two_files_and_one_found_twice_keeps_one(tmp_path: Path) -> None:
    run = Run("reference:memory", load_catalogue(), report_dir=tmp_path)
    starts = [FLOW, Start("x", "f", "\ud800")]
    answers = [FLOW, Start("x", "f", None), Resume("x", "go1", "\ud800")]
    first = run.write_counterexample("implementation-error", starts, None, "start raised")
    second = run.write_counterexample("implementation-error", answers, None, "resume raised")
    again = run.write_counterexample("implementation-error", starts, None, "start raised")
    assert first is not None and second is not None
    assert first != second and again == first
    assert [len(load_regression(Path(p)).operations) for p in (first, second)] == [2, 3]
    assert Path(second).name == "implementation-error-2.json"


def test_an_invariant_keeps_one_file_named_after_it(tmp_path: Path) -> None:
    run = Run("reference:memory", load_catalogue(), report_dir=tmp_path)
    first = run.write_counterexample("gate.i-receives-entry-i", [FLOW, Start("x", "f", 1)], "m", None)
    shorter = run.write_counterexample("gate.i-receives-entry-i", [FLOW, Start("x", "f", None)], "m", None)
    assert first == shorter and Path(first).name == "gate.i-receives-entry-i.json"
