"""docs/invariants.md, the catalogue as a document: the committed copy is what
`loomcheck docs` renders now (a stale copy fails the build, like the spec
exports), and the rendering does not move with what changes on every run."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.reports.catalogue_doc import render_docs
from loomcheck.reports.model import Report
from loomcheck.reports.regenerate import PEERS, RUNS
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import committed_regressions

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "invariants.md"
REFERENCE_REPORT = ROOT / "reports" / "reference" / "report.json"
# The committed reports the document shows: the reference through both transports, and the example adapter.
COMMITTED = [ROOT / "reports" / name / "report.json" for name, _ in RUNS]
REGENERATE = ("run `loomcheck docs --report reports/reference/report.json --report reports/reference-stdio/report.json "
              "--report reports/node-example/report.json --out docs/invariants.md` from the repository root and commit "
              "the result")


def reference_report() -> Report:
    return Report.model_validate_json(REFERENCE_REPORT.read_text(encoding="utf-8"))


def rendered(*reports: Report) -> str:
    return render_docs(load_catalogue(), committed_regressions(), list(reports))


def test_committed_invariants_doc_is_up_to_date() -> None:
    committed = [Report.model_validate_json(path.read_text(encoding="utf-8")) for path in COMMITTED]
    assert DOC.read_text(encoding="utf-8") == rendered(*committed), f"docs/invariants.md is stale: {REGENERATE}"


def test_volatile_report_fields_do_not_change_the_document() -> None:
    report = reference_report()
    again = report.model_copy(update={"started": "1999-01-01T00:00:00+00:00", "wallSeconds": 9999.0,
                                      "stateMachineSteps": 1,
                                      "results": [r.model_copy(update={"examples": r.examples + 7})
                                                  for r in report.results]})
    assert rendered(again) == rendered(report)


def test_every_invariant_has_an_anchor_and_a_contents_entry() -> None:
    text = rendered(reference_report())
    for inv in load_catalogue().invariants:
        assert f'<a id="{inv.id}"></a>' in text, inv.id
        assert f"[{inv.id}](#{inv.id})" in text, inv.id


def test_an_example_log_shows_operations_and_events() -> None:
    text = rendered()
    section = text.split('<a id="gate.i-receives-entry-i"></a>', 1)[1].split("<a id=", 1)[0]
    assert "Example regression log `spec/regressions/" in section
    assert " 1. define " in section and "-> ok" in section
    assert "#1 EXECUTION_STARTED {" in section
    assert "| implementation |" not in section  # no report given, no status table


def test_status_table_names_the_implementation_and_relative_counterexamples() -> None:
    text = rendered(reference_report())
    section = text.split('<a id="hazard.mixed-parallel"></a>', 1)[1].split("<a id=", 1)[0]
    assert "| loomcheck-reference 0.1.0 (EVENT_SCHEMA 1.20.0) | hazard |" in section
    assert "`spec/regressions/0104-mixed-parallel-hazard.json`" in section
    assert str(ROOT) not in text


def test_cli_writes_the_file_and_prints_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "invariants.md"
    assert main(["docs", "--report", str(REFERENCE_REPORT), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == rendered(reference_report())
    capsys.readouterr()
    assert main(["docs"]) == 0
    assert capsys.readouterr().out == rendered()


def test_cli_refuses_a_file_that_is_not_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "report.json"
    bad.write_text("{}", encoding="utf-8")
    assert main(["docs", "--report", str(bad)]) == 3
    assert "not a loomcheck report" in " ".join(capsys.readouterr().out.split())  # the console wraps long lines


def test_committed_matrix_is_up_to_date() -> None:
    """reports/matrix.html is what `loomcheck matrix` renders of the committed reports now."""
    from loomcheck.reports.html import render_matrix
    from loomcheck.reports.reading import read_report

    reports_dir = ROOT / "reports"
    paths = [reports_dir / name / "report.json" for name, _ in RUNS] + \
            [reports_dir / "peers" / peer / "report.json" for peer in PEERS]
    rendered_matrix = render_matrix([(path, read_report(path)) for path in paths], html_dir=reports_dir)
    assert (reports_dir / "matrix.html").read_text(encoding="utf-8") == rendered_matrix, \
        "reports/matrix.html is stale: run `.venv/bin/python -m loomcheck.reports.regenerate` and commit the result"
