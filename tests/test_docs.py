"""docs/invariants.md, the catalogue as a document, and results/matrix.html: the committed copies
are what the committed reports give now (a stale copy fails the build, like the spec exports;
no kernel runs here), the rendering does not move with what changes on every run, and the
hand-written pages link only to what exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.reports.catalogue_doc import render_docs
from loomcheck.reports.model import Report
from loomcheck.reports.regenerate import DOC, MATRIX, RESULTS, ROOT, derived_outputs
from loomcheck.reports.run_figures import begin_marker, with_figures
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import committed_regressions
from markdown_links import broken_links

REFERENCE_REPORT = RESULTS / "reference" / "report.json"
REGENERATE = "run `.venv/bin/python -m loomcheck.reports.regenerate --derived-only` from the repository root and commit the result"
# The pages people write: their links must survive a file's move.
HAND_WRITTEN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(RESULTS.rglob("*.md"))]


def reference_report() -> Report:
    return Report.model_validate_json(REFERENCE_REPORT.read_text(encoding="utf-8"))


def rendered(*reports: Report) -> str:
    return render_docs(load_catalogue(), committed_regressions(), list(reports))


@pytest.fixture(scope="module")
def derived() -> dict[Path, str]:
    return derived_outputs()


def test_committed_invariants_doc_is_up_to_date(derived: dict[Path, str]) -> None:
    assert DOC.read_text(encoding="utf-8") == derived[DOC], f"docs/invariants.md is stale: {REGENERATE}"


def test_committed_matrix_is_up_to_date(derived: dict[Path, str]) -> None:
    """results/matrix.html is what `loomcheck matrix` renders of the committed reports now."""
    assert MATRIX.read_text(encoding="utf-8") == derived[MATRIX], f"results/matrix.html is stale: {REGENERATE}"


def test_every_derived_output_is_fresh(derived: dict[Path, str]) -> None:
    """The peers' tables in README.md and results/peers/README.md included: made from the committed reports."""
    stale = [path.relative_to(ROOT).as_posix() for path, text in derived.items()
             if path.read_text(encoding="utf-8") != text]
    assert not stale, f"stale: {stale}: {REGENERATE}"


@pytest.mark.parametrize("page", HAND_WRITTEN, ids=[p.relative_to(ROOT).as_posix() for p in HAND_WRITTEN])
def test_every_link_of_a_page_leads_somewhere(page: Path) -> None:
    assert broken_links(page) == []


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


def test_an_analysis_quotes_its_runs_figures_from_the_report() -> None:
    """A peer's ANALYSIS.md asks for a run's figures by name; they come from that run's report,
    and a name with no committed run is an error, not an empty block."""
    report = reference_report()
    stale = f"# analysis\n{begin_marker('somepeer')}\n500 passed, nothing failed\n<!-- /run-figures -->\nprose\n"
    refilled = with_figures(stale, {"somepeer": report}, Path("ANALYSIS.md"))
    assert "500 passed" not in refilled and refilled.endswith("<!-- /run-figures -->\nprose\n")
    assert f"**{report.summary.passed} passed, {report.summary.failed} failed" in refilled
    assert with_figures(refilled, {"somepeer": report}, Path("ANALYSIS.md")) == refilled
    with pytest.raises(ValueError, match="'somepeer'"):
        with_figures(stale, {}, Path("ANALYSIS.md"))
