"""A run's coverage (run/coverage_items.py, run/coverage.py): the items a run should reach, the
layers that reached them, the gaps (a failure of the suite) and how the report shows them.
What each operation reaches is tests/test_reached.py's."""

from __future__ import annotations

from collections import Counter

import pytest

from coverage_scripts import GATE, WRONG_GATE, mutant, reference, run
from loomcheck.contract.script import Define, Resume, Start
from loomcheck.contract.session import Session, hello_of
from loomcheck.reports.markdown import render_markdown
from loomcheck.reports.model import CoverageRow, Implementation, Report
from loomcheck.run.coverage import GAP_REASON, LAYERS, Coverage, gap_findings
from loomcheck.run.coverage_items import REFUSAL_OPTIONAL, REFUSAL_REQUIRES, universe
from loomcheck.spec.catalogue import FEATURES
from loomcheck.spec.vocabulary import refusals


# -- the universe -------------------------------------------------------------------------
def test_every_refusal_reason_is_an_item_and_the_tables_name_real_features() -> None:
    items = universe()
    assert {i.name for i in items if i.kind == "refusal"} == refusals().reasons
    assert set(REFUSAL_REQUIRES) <= refusals().reasons, "a stale entry in REFUSAL_REQUIRES"
    assert set(REFUSAL_OPTIONAL) <= refusals().reasons, "a stale entry in REFUSAL_OPTIONAL"
    assert all(set(i.requires) <= set(FEATURES) for i in items), [i.key for i in items if set(i.requires) - set(FEATURES)]
    assert len({i.key for i in items}) == len(items)
    assert Counter(i.kind for i in items) == {"refusal": len(refusals().refusal), "verdict": 6, "recording-row": 5,
                                               "emit-rule": 13}


def test_a_new_reason_in_refusals_toml_is_a_gap_until_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reason absent from REFUSAL_REQUIRES needs nothing: applicable everywhere, unreached."""
    monkeypatch.delitem(REFUSAL_REQUIRES, "gate-mismatch")
    from loomcheck.run import coverage_items as module
    module.refusal_items.cache_clear()
    module.item_keys.cache_clear()
    try:
        gaps = {row.key for row in Coverage().gaps(())}
    finally:
        monkeypatch.undo()
        module.refusal_items.cache_clear()
        module.item_keys.cache_clear()
    assert "refusal:gate-mismatch" in gaps and "refusal:terminal" not in gaps


# -- the collector, gaps and applicability ------------------------------------------------------
ALL = frozenset(FEATURES)


def test_gaps_are_applicable_items_no_layer_reached() -> None:
    coverage = run(reference, WRONG_GATE)
    coverage.credit("refusal:kernel-namespace", "symbolic")
    rows = {row.key: row for row in coverage.summary(ALL)}
    assert rows["refusal:gate-mismatch"].reachedBy == ["stateful"] and not rows["refusal:gate-mismatch"].gap
    assert rows["refusal:kernel-namespace"].reachedBy == ["symbolic"]
    gaps = {row.key for row in coverage.gaps(ALL)}
    assert "refusal:terminal" in gaps and "refusal:gate-mismatch" not in gaps and "refusal:kernel-namespace" not in gaps
    unreachable = {item.key for item in universe() if item.unreachable is not None or item.optional is not None}
    assert len(gaps) == len(universe()) - len(coverage.by) - len(unreachable)
    assert not rows["emit-rule:not-plain-json"].applicable  # no driver call reaches it: never a gap
    assert "not reachable through the driver" in (rows["emit-rule:not-plain-json"].why or "")


def test_a_mutant_shows_up_as_a_gap() -> None:
    script = [Define("f", GATE), Start("x", "f"), Resume("x", "EXECUTION_RESUMED", 1)]
    assert "refusal:kernel-namespace" not in {r.key for r in run(reference, script).gaps(ALL)}
    assert "refusal:kernel-namespace" in {r.key for r in run(mutant("open_namespace"), script).gaps(ALL)}


def test_items_needing_missing_features_are_not_applicable_and_no_gap() -> None:
    coverage = Coverage()
    rows = {row.key: row for row in coverage.summary({"recover"})}
    assert not rows["emit-rule:meter-validated"].applicable and rows["emit-rule:meter-validated"].why == "needs emit-guard"
    assert rows["refusal:terminal"].applicable and rows["refusal:terminal"].gap
    assert rows["refusal:park-not-located"].why == "needs security, retention"
    gaps = {row.key for row in coverage.gaps({"recover"})}
    assert "emit-rule:meter-validated" not in gaps and "refusal:terminal" in gaps


def test_layers_accumulate_merge_and_are_checked() -> None:
    a, b = Coverage(), Coverage()
    a.credit("refusal:gate-mismatch", "explorer")
    b.credit("refusal:gate-mismatch", "stateful")
    b.credit("verdict:passed", "corpus")
    a.merge(b)
    rows = {row.key: row for row in a.summary(ALL)}
    assert rows["refusal:gate-mismatch"].reachedBy == ["stateful", "explorer"]  # in LAYERS order
    assert rows["verdict:passed"].reachedBy == ["corpus"]
    with pytest.raises(ValueError):
        a.credit("refusal:gate-mismatch", "vibes")
    with pytest.raises(KeyError):
        a.credit("refusal:no-such-reason", "stateful")
    assert set(LAYERS) == {"stateful", "explorer", "symbolic", "regressions", "corpus"}


def test_the_session_observer_hook() -> None:
    driver = reference()
    session = Session(driver, frozenset(hello_of(driver).features))
    coverage = Coverage()
    session.observers.append(coverage.observer("regressions"))
    session.reset()
    for op in WRONG_GATE:
        session.apply(op)
    assert coverage.by["refusal:gate-mismatch"] == {"regressions"}


# -- the report --------------------------------------------------------------------------------
def report_with(rows: list[CoverageRow]) -> Report:
    return Report(suiteVersion="0", implementation=Implementation(spec="x"), profile="ci", started="now", coverage=rows)


def test_gaps_become_suite_error_findings_and_the_report_renders_them() -> None:
    coverage = run(reference, WRONG_GATE)
    rows = coverage.summary(ALL)
    findings = gap_findings(rows)
    assert findings and all(f.kind == "suite-error" and f.reason == GAP_REASON for f in findings)
    assert len(findings) == len(coverage.gaps(ALL))
    assert any("refusal 'terminal'" in f.message for f in findings)
    report = report_with([CoverageRow(**row.to_json()) for row in rows])
    text = render_markdown(report)
    section = text.split("### Coverage", 1)[1].split("<details>", 1)[0]
    refused = len([r for r in rows if r.kind == "refusal" and r.reachedBy])
    applicable = len([r for r in rows if r.kind == "refusal" and r.applicable])  # a kernel's own bounds are not
    assert applicable == len(refusals().refusal) - len(REFUSAL_OPTIONAL)
    assert f"| refusal reasons | {refused}/{applicable} **gap** | stateful {refused} | " \
           f"{len(REFUSAL_OPTIONAL)} |" in section
    assert "`refusal:terminal`" in section and "`refusal:gate-mismatch`" not in section
    assert Report.model_validate_json(report.model_dump_json()).coverage == report.coverage


def test_full_coverage_says_so_and_old_reports_render_without_a_section() -> None:
    coverage = Coverage()
    for item in universe():
        coverage.credit(item.key, "symbolic")
    text = render_markdown(report_with([CoverageRow(**row.to_json()) for row in coverage.summary(ALL)]))
    assert "Every applicable item was reached." in text and "**gap**" not in text
    old = report_with([]).model_dump(exclude={"coverage"})
    assert "### Coverage" not in render_markdown(Report.model_validate(old))


def test_an_item_the_suite_asked_for_and_the_kernel_never_produced_is_the_kernels_finding(tmp_path) -> None:
    """A refusal a committed regression log asks for (the reference reaches it there) that the kernel
    never produces is the implementation's finding, with the decision that requires it; an item no
    log asks for stays the suite's gap."""
    import sys
    from pathlib import Path

    from loomcheck.run.regression_phase import regression_phase
    from loomcheck.run.review import asked_for
    from loomcheck.run.runner import Run
    from loomcheck.spec.catalogue import load_catalogue

    sys.path.insert(0, str(Path(__file__).parent))
    run = Run("python:mutants.no_contract_check:make", load_catalogue(), only=["migration.target-input-contract"],
              report_dir=tmp_path)
    session = run.connect()
    assert session is not None
    regression_phase(run, session)
    asked = asked_for(run, {"refusal:input-contract", "verdict:unverifiable"})
    assert set(asked) == {"refusal:input-contract"}
    message = asked["refusal:input-contract"]
    assert "ADR 0056 Consequences requires" in message and "0056-acceptance-criterion-7.json" in message
    assert "a conforming kernel: refused:input-contract; this implementation: ok" in message
    run.driver.close()


def test_a_kernels_own_bound_is_no_gap_and_shows_when_reached() -> None:
    """A refusal only a kernel's own choice makes (spec/profiles.toml, ingress-limits): unreached it
    is not applicable, never a gap; reached, its row names the layer like any other."""
    rows = {row.key: row for row in Coverage().summary(ALL)}
    for reason in REFUSAL_OPTIONAL:
        row = rows[f"refusal:{reason}"]
        assert not row.gap and not row.applicable and (row.why or "").startswith("not required"), row
    coverage = Coverage()
    coverage.credit("refusal:payload-too-large", "corpus")
    row = {r.key: r for r in coverage.summary(ALL)}["refusal:payload-too-large"]
    assert row.reachedBy == ["corpus"] and row.applicable and not row.gap
