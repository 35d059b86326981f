"""Explanations (properties/explain.py): built from the counterexample,
rendered alike everywhere."""

from __future__ import annotations

from pathlib import Path

from loomcheck.properties.explain import LAST, explain, recording_row
from loomcheck.contract.logview import Moment
from loomcheck.properties.registry import Violation
from loomcheck.reports.markdown import render_markdown
from loomcheck.reports.html import render_matrix
from loomcheck.reports.model import ExplanationModel, InvariantRecord, Report

LOG = [
    {"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f", "input": None}},
    {"seq": 2, "type": "STEP_STARTED", "payload": {"stepId": "a", "attempt": 1}},
    {"seq": 3, "type": "EXECUTION_RECOVERED", "payload": {}},
    {"seq": 4, "type": "EXECUTION_RESUMED", "payload": {}},
    {"seq": 5, "type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "go1"}}},
]


def test_the_explanation_cites_the_decision_and_the_events_with_their_roles() -> None:
    violation = Violation("answer.one-suspend-point", "#4 became an entry while running.", (3, 4),
                          ("the last event before the answer", "it became answer entry 0"), "record nothing", "x")
    why = explain(violation, {"x": LOG})
    assert (why.adr, why.decision) == ("0104", "D1")
    assert [(e.seq, e.type, e.role) for e in why.evidence] == [
        (3, "EXECUTION_RECOVERED", "the last event before the answer"), (4, "EXECUTION_RESUMED", "it became answer entry 0")]
    assert why.evidence[1].before.startswith("running, parked at no gate")
    text = why.text()
    assert text.startswith('answer.one-suspend-point (ADR 0104 D1, "Every entry answers one suspend point") is violated: '
                           "#4 became an entry while running.")
    assert "  #3 EXECUTION_RECOVERED {}: the last event before the answer" in text
    assert "What ADR 0104 D1 requires instead: record nothing" in text
    assert text.endswith("The invariant: docs/invariants.md#answer.one-suspend-point")


def test_the_state_before_an_event_is_walked_from_the_log() -> None:
    why = explain(Violation("answer.one-suspend-point", "m", (5,), execution="x"), {"x": LOG + [
        {"seq": 6, "type": "EXECUTION_RESUMED", "payload": {"ok": True}}]})
    assert why.evidence[0].before.startswith("running")
    parked = explain(Violation("answer.one-suspend-point", "m", (6,), execution="x"), {"x": LOG + [
        {"seq": 6, "type": "EXECUTION_RESUMED", "payload": {"ok": True}}]})
    assert parked.evidence[0].before == "parked on 'go1'"


def test_a_check_that_cites_nothing_is_explained_from_the_end_of_the_log() -> None:
    why = explain(Violation("refusal.append-nothing", "the refusal appended"), {"x": LOG})
    assert [(e.seq, e.role) for e in why.evidence] == [(5, LAST)]


def test_an_event_the_log_does_not_hold_is_said_to_be_missing() -> None:
    why = explain(Violation("answer.one-suspend-point", "m", (99,), execution="x"), {"x": LOG})
    assert why.evidence[0].type == "" and why.evidence[0].ref() == "#99"
    assert "not in the log" in why.evidence[0].before


def test_the_d1_table_row_follows_the_state() -> None:
    assert 'row "crashed (running/pending)": record nothing' in recording_row(Moment("running", None, 0))
    assert 'row "parked at a gate' in recording_row(Moment("suspended", "go1", 0))
    assert 'row "parked in doubt' in recording_row(Moment("suspended", "EffectInDoubtResolved", 0))
    assert 'row "terminal' in recording_row(Moment("failed", None, 0))


def test_markdown_and_html_show_the_explanation(tmp_path: Path) -> None:
    why = explain(Violation("answer.one-suspend-point", "#4 became an entry while running.", (4,), ("the entry",),
                            "record nothing", "x"), {"x": LOG})
    report = Report.model_validate_json((Path(__file__).parents[1] / "results/reference/report.json").read_text())
    record = next(r for r in report.results if r.id == "answer.one-suspend-point")
    failed = InvariantRecord(**{**record.model_dump(), "status": "fail", "message": why.claim,
                                "explanation": ExplanationModel.model_validate(why.to_json())})
    report.results = [failed]
    report.summarise()
    markdown = render_markdown(report)
    assert "### Why they fail" in markdown and "`#4 EXECUTION_RESUMED {}`: the entry" in markdown
    path = tmp_path / "report.json"
    path.write_text(report.model_dump_json())
    html = render_matrix([(path, report)], html_dir=tmp_path)
    assert "Why they fail" in html and "#4 EXECUTION_RESUMED {}</code>: the entry" in html


def test_a_difference_from_a_regression_log_is_explained_by_what_the_operation_appended() -> None:
    """A committed regression log that fails on its outcomes, not on a check, still cites its events."""
    from loomcheck.run.replay import difference_violation, run_on_reference
    from loomcheck.contract.script import Define, Resume, Start

    result = run_on_reference([Define("f", {"body": [{"op": "suspend", "on": "go1"}, {"op": "complete"}]}),
                               Start("x", "f", None), Resume("x", "go1", "yes")])
    appended = [e["seq"] for e in result.logs["x"][2:]]  # what the resume wrote after the park
    outcome = difference_violation("resume.gate-mismatch", "some-log", "operation 3: expected refused:gate-mismatch, got ok",
                                   result)
    assert outcome.events == tuple(appended[:4]) and outcome.execution == "x"
    assert outcome.roles[0] == "appended by operation 3"
    assert outcome.expected == "operation 3 refused:gate-mismatch, as some-log records it"
    why = result.explain(outcome)
    assert [e.type for e in why.evidence][:2] == ["go1", "EXECUTION_RESUMED"]

    event = difference_violation("fold.matches-reference", "some-log", 'x #2: expected EXECUTION_SUSPENDED {}, got go1 "yes"',
                                 result)
    assert event.events == (2,) and event.execution == "x" and "differs" in event.roles[0]
