"""report.html and `loomcheck replay --html`: each root cause's counterexample drawn as a
timeline (lanes, events by seq, parks, answers and the arrow to the suspend point that consumes
each, refusals, the cited events with their roles), checked on the HTML's structure with
html.parser (no browser: tests/test_timeline_browser.py looks at it in one)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.contract.script import from_model
from loomcheck.contract.session import Session, hello_of
from loomcheck.reports.log_reading import read_log
from loomcheck.reports.model import ExplanationModel, Implementation, InvariantRecord, Report, RootCause
from loomcheck.reports.report_page import render_replay_page, render_report_page
from loomcheck.reports.writers import write_atomically
from loomcheck.run.counterexamples import CounterexampleFiles
from loomcheck.run.loading import TransportOptions
from loomcheck.run.replay import run_operations
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.files import SPEC_ROOT
from loomcheck.spec.regressions import DefineModel, Found, ResumeModel, StartModel, load_regression
from mutants.recovery_resumes import make as recovery_resumes

# ADR 0104's worked example: go1 answered, a crash, a recovery, then go2 answered. The mutant's
# recovery records EXECUTION_RESUMED {}, which go2 then passes with.
CRASH = SPEC_ROOT / "regressions" / "0104-crash-between-go1-and-go2.json"
ADDRESSED = "answer.addressed-while-parked"


class Page(HTMLParser):
    """The elements of a page, each as (tag, attributes, the text directly inside it)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self.open: list[int] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}, []))
        if tag not in ("meta", "col", "br", "img", "link", "input"):
            self.open.append(len(self.elements) - 1)

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            if self.elements[self.open.pop()][0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for index in self.open:
            self.elements[index][2].append(data)

    def having(self, css: str) -> list[tuple[str, dict[str, str], str]]:
        return [(tag, attrs, " ".join(" ".join(text).split())) for tag, attrs, text in self.elements
                if set(css.split()) <= set(attrs.get("class", "").split())]


def _failing_run(tmp_path: Path) -> tuple[Report, Path]:
    """A report of the mutant failing ADDRESSED, with a counterexample file as a run writes it."""
    log = load_regression(CRASH)
    operations = [from_model(m) for m in log.operations]
    driver = recovery_resumes()
    try:
        result = run_operations(Session(driver, frozenset(hello_of(driver).features)), operations)
    finally:
        driver.close()
    violation = result.violated(ADDRESSED)[0]
    explanation = ExplanationModel.model_validate(result.explain(violation).to_json())
    files = CounterexampleFiles(tmp_path, "python:mutants.recovery_resumes:make", TransportOptions())
    path = files.write(ADDRESSED, operations, violation.message, None, adr="0104", invariants=[ADDRESSED],
                       one_file=True, did=result)
    inv = load_catalogue().get(ADDRESSED)
    record = InvariantRecord(id=inv.id, adr=inv.adr, decision=inv.decision, title=inv.title, kind=inv.kind,
                             statement=inv.statement, checks=list(inv.checks), status="fail", examples=1,
                             message=violation.message, counterexample=path, explanation=explanation,
                             rootCause=inv.id)
    na = load_catalogue().get("gate.legacy-single-payload")
    skipped = InvariantRecord(id=na.id, adr=na.adr, decision=na.decision, title=na.title, kind=na.kind,
                              statement=na.statement, checks=list(na.checks), status="not-applicable",
                              message="needs the feature load")
    report = Report(suiteVersion="0.1.0", implementation=Implementation(spec="python:mutants.recovery_resumes:make",
                                                                        name="mutant", version="1"),
                    profile="ci", started="2026-01-01T00:00:00+00:00", complete=True, results=[record, skipped],
                    rootCauses=[RootCause(head=inv.id, adr=inv.adr, decision=inv.decision, title=inv.title,
                                          message=violation.message, counterexample=path)])
    report.summarise()
    return report, tmp_path / "report.json"


def _assert_self_contained(html: str) -> None:
    page = Page(html)
    assert not [tag for tag, _, _ in page.elements if tag in ("script", "link", "img", "iframe", "object")]
    urls = [value for _, attrs, _ in page.elements for key, value in attrs.items() if key in ("href", "src")]
    assert not [u for u in urls if re.match(r"^(https?:)?//", u)], urls
    assert "@import" not in html and "url(" not in html


def test_the_page_leads_with_the_verdict_and_draws_the_counterexample(tmp_path: Path) -> None:
    report, report_path = _failing_run(tmp_path)
    html = render_report_page(report, report_path, tmp_path)
    page = Page(html)
    _assert_self_contained(html)
    verdict = page.having("verdict")[0][2]
    assert verdict.startswith("failed exit 1: an invariant was violated") and "1 root cause" in verdict
    assert html.index('id="verdict"') < html.index('class="cause"') < html.index('id="invariants"')

    lanes = page.having("h lane")
    assert [attrs["data-lane"] for _, attrs, _ in lanes] == ["x1"]
    seqs = [int(attrs["data-seq"]) for _, attrs, _ in page.having("ev") if "data-seq" in attrs]
    assert seqs == sorted(seqs) and seqs[0] == 1 and len(seqs) == 12  # every event of x1's log, once, in order
    parks = [text for _, _, text in page.having("ev k-park")]
    assert parks[0].startswith("#2 EXECUTION_SUSPENDED") and "gate #0 'go1'" in parks[0]
    cited = {int(attrs["data-seq"]): text for _, attrs, text in page.having("ev cited")}
    assert set(cited) == {8, 11}
    assert "it recorded answer entry 1 while the execution was parked at no gate" in cited[8]
    assert "the gate 'go2' passed with that entry" in cited[11]
    refusal = page.having("ev k-refusal")[0][2]
    assert refusal == "refused: not-suspended nothing appended"
    assert page.having("ev k-crash")[0][2].startswith("the worker crashed")
    # The arrows: #4 answers the park at #2 (upwards), #8 the recovery's entry goes down to go2's observation (#11).
    assert len(page.having("pc from-up")) == 1 and len(page.having("pc to-from-below")) == 1
    assert len(page.having("pc from-down wrong")) == 1 and len(page.having("pc to-from-above wrong")) == 1
    why = page.having("why")[0][2]
    assert "A gate passes only when a resume addresses it while it is parked." in why
    assert "What it requires instead" in why
    assert "1 not applicable" in page.having("na")[0][2]  # folded away, not in the main table
    assert [attrs["id"] for tag, attrs, _ in page.elements if tag == "tr" and "id" in attrs][0] == ADDRESSED

    report.rootCauses = []  # a report written before failures were grouped: each failure drawn on its own
    older = Page(render_report_page(report, report_path, tmp_path))
    heading = next(" ".join(" ".join(text).split()) for tag, attrs, text in older.elements if attrs.get("id") == "root-causes")
    assert len(older.having("timeline")) == 1 and heading.startswith("1 failing invariant (a report written before")


def test_a_counterexample_without_the_implementations_side_shows_the_operations(tmp_path: Path) -> None:
    report, report_path = _failing_run(tmp_path)
    path = Path(report.rootCauses[0].counterexample or "")
    log = load_regression(path)
    path.write_text(log.model_copy(update={"found": log.found.model_copy(  # type: ignore[union-attr]
        update={"outcomes": None, "appended": None, "logs": None})}).model_dump_json(), encoding="utf-8")
    page = Page(render_report_page(report, report_path, tmp_path))
    assert len(page.having("op")) == 5 and not page.having("ev") and page.having("unrecorded")
    listed = [text for _, _, text in page.having("cited")][0]
    assert listed.startswith("1 #8 EXECUTION_RESUMED {} : it recorded answer entry 1") and "not in the picture" not in listed


def test_the_reading_pairs_each_answer_with_the_suspend_point_that_consumes_it() -> None:
    park = {"type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "go1"}}}
    log = [{"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f"}}, {"seq": 2, **park},
           {"seq": 3, "type": "EXECUTION_RESUMED", "payload": "yes"},
           {"seq": 4, "type": "loomcheck.observed", "payload": {"gate": 0, "on": "go1", "value": "yes"}},
           {"seq": 5, "type": "EXECUTION_RECOVERED", "payload": {}},
           {"seq": 6, "type": "EXECUTION_RESUMED", "payload": None},     # ADR 0104 D3: status only
           {"seq": 7, "type": "EXECUTION_RESUMED", "payload": {}},       # an entry while running
           {"seq": 8, "type": "loomcheck.observed", "payload": {"gate": 1, "on": "go2", "value": "no"}}]
    reading = read_log(log, gates=["go1", "go2"])
    assert [(link.source, link.target, link.index) for link in reading.links] == [(3, 2, 0), (7, 8, 1)]
    assert reading.kinds[6] == "status-only" and 6 not in reading.wrong
    assert reading.wrong == {7, 8} and "gate #1 'go2' passes with it" in reading.notes[7]
    assert reading.notes[8].endswith("but entry 1 is {} (#7)")
    assert read_log(log[:7], gates=["go1", "go2"]).pending[0].index == 1  # nothing consumed it yet


def test_replay_writes_the_same_picture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "timeline.html"
    code = main(["replay", str(CRASH), "--impl", "python:mutants.recovery_resumes:make", "--html", str(out)])
    assert code == 1 and f"wrote {out}" in capsys.readouterr().out
    html = out.read_text(encoding="utf-8")
    _assert_self_contained(html)
    page = Page(html)
    pictures = page.having("timeline")
    assert len(pictures) == 3  # answer.one-suspend-point, ADDRESSED, recovery.records-no-answer
    assert len([a for _, a, _ in page.having("ev") if "data-seq" in a]) == 3 * 12 and page.having("pc from-down wrong")
    assert "operation 5: expected ok, got refused:not-suspended" in html


def test_hostile_names_and_deep_payloads_are_drawn_and_written(tmp_path: Path) -> None:
    """An execution id with a lone surrogate (the hostile-names corpus) and a payload nested
    5 000 deep (the hostile-payloads corpus) still give a page a UTF-8 file can hold."""
    deep: object = "bottom"
    for _ in range(5000):
        deep = [deep]
    lane = "x\ud800"
    program = {"body": [{"op": "suspend", "on": "go1"}, {"op": "observe"}, {"op": "complete"}]}
    log = load_regression(CRASH)
    found = Found(invariant=ADDRESSED, message="m", implementation="i", outcomes=["ok", "ok", "ok"],
                  appended=[{}, {lane: [1, 2]}, {lane: [3, 4, 5, 6]}],
                  logs={lane: [{"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f"}},
                               {"seq": 2, "type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "go1"}}},
                               {"seq": 3, "type": "go1", "payload": deep},
                               {"seq": 4, "type": "EXECUTION_RESUMED", "payload": deep},
                               {"seq": 5, "type": "loomcheck.observed", "payload": {"gate": 0, "value": deep}},
                               {"seq": 6, "type": "EXECUTION_COMPLETED", "payload": {}}]})
    operations = [DefineModel(op="define", flow="f", program=program), StartModel(op="start", execution=lane, flow="f"),
                  ResumeModel(op="resume", execution=lane, type="go1", payload=deep)]
    out = tmp_path / "replay.html"
    write_atomically(out, render_replay_page(log.model_copy(update={"operations": operations}), found, "i", [], [],
                                             None, "passed"))
    page = Page(out.read_text(encoding="utf-8"))
    assert [attrs["data-lane"] for _, attrs, _ in page.having("h lane")] == ["x\\ud800"]
    assert len([a for _, a, _ in page.having("ev") if "data-seq" in a]) == 6 and page.having("pc from-up")
