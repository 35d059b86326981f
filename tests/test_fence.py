"""Feature gating is mechanical (contract/needs.py): every regression log, corpus case,
explorer scenario and state-machine rule runs only on a kernel that declares every
feature it reaches. Proved with the feature fence (tests/fakes/fence.py): the
reference declaring a subset, which records a breach whenever the harness calls a
method, defines a program or sends an option of a feature it did not declare."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import pytest

from fakes.fence import ALL, NODE, FenceBreach, FencedKernel
from loomcheck.explore.alphabet import scenarios
from loomcheck.fleet.case_replay import replay_case
from loomcheck.contract.needs import Undeclared, operations_need
from loomcheck.run.runner import PHASES, Run
from loomcheck.contract.script import Recover, from_model
from loomcheck.contract.session import ImplementationFailed, Session, hello_of
from loomcheck.corpora.result import CorpusResult
from loomcheck.corpora.legacy_logs import CASES, _judge, case_needs, fleet_cases, fleet_needs
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import committed_regressions

SMALL = {"none": frozenset(), "fold": frozenset({"fold"}), "fold+recover": frozenset({"fold", "recover"}),
         "node-example": NODE, "legacy-scan": frozenset({"load-log", "legacy-scan"}),
         "approvals": frozenset({"security"}),
         "legacy-with-security": frozenset({"load-log", "legacy-scan", "human-steps", "security"})}
SETS = {**{f"all-but-{f}": ALL - {f} for f in sorted(ALL)}, **SMALL}


def walk(features: frozenset[str], tmp: Path, machine_examples: int = 12) -> tuple[list[str], Run]:
    """Every phase of a run but its real crashes (the fence lives in process), on a fenced kernel:
    what applies to it is decided as for any run (run/applicability.py, through Run.meet)."""
    kernel = FencedKernel(features)
    run = Run("fence", load_catalogue(), report_dir=tmp, explore_depth=2, explore_seconds=10)
    run.budget = replace(run.budget, max_examples=machine_examples)
    run.driver = kernel
    run.meet(hello_of(kernel))
    session = run.observed(Session(kernel, features))
    for name, body in PHASES:
        if name != "root causes":
            run.phase(name, lambda body=body: body(run, session))
    run.report.complete = True
    run.records()
    return kernel.breaches, run


@pytest.mark.parametrize("name", list(SETS))
def test_no_case_reaches_an_undeclared_feature(name: str, tmp_path: Path) -> None:
    breaches, run = walk(SETS[name], tmp_path)
    assert breaches == [], breaches[:5]
    assert [f.message for f in run.report.findings] == []  # an Undeclared would be a suite-error here
    # A profile disagreement (an ADR-only kernel and loomcheck's extension) is reported apart, never wrong.
    wrong = [(r.id, r.status, r.message) for r in run.report.results if r.status in ("fail", "error")
             and not r.disagrees]
    assert wrong == []


def test_a_redeployed_flow_needs_code_versions() -> None:
    """The leak this gating closes: ADR 0056's criterion 7 redefines a flow under its id (K11)."""
    (log,) = [log for _, log in committed_regressions() if log.name == "0056-acceptance-criterion-7"]
    assert "code-versions" in operations_need([from_model(m) for m in log.operations])


def test_the_fence_and_the_session_each_stop_an_undeclared_call() -> None:
    kernel = FencedKernel({"fold"})
    with pytest.raises(FenceBreach):
        kernel.recover("x")
    assert kernel.breaches and "recover" in kernel.breaches[0]
    kernel.breaches.clear()
    with pytest.raises(Undeclared):
        Session(kernel, frozenset({"fold"})).apply(Recover("x"))
    assert kernel.breaches == []  # the session refused before the call was made


def exact(needs: set[str], drive: Callable[[FencedKernel, Session], object]) -> list[str]:
    """Problems with `needs` as a case's declaration: it must run fenced at exactly `needs`,
    and reach each of them (fenced without one, with the session's gate open, it breaches)."""
    problems = []
    kernel = FencedKernel(needs)
    try:
        drive(kernel, Session(kernel, frozenset(needs)))
    except (Undeclared, ImplementationFailed) as exc:
        problems.append(f"at its own needs {sorted(needs)}: {exc}")
    for feature in sorted(needs):
        kernel = FencedKernel(needs - {feature})
        try:
            drive(kernel, Session(kernel, frozenset(needs)))
        except (ImplementationFailed, FenceBreach):
            pass  # the fence's raise, through the session or straight from the driver
        if not kernel.breaches:
            problems.append(f"declares {feature!r} but never reaches it")
    return problems


def test_every_legacy_case_declares_exactly_what_it_reaches() -> None:
    found = {case.name: exact(case_needs(case), lambda k, s, case=case: list(_judge(s, case))) for case in CASES}
    assert {name: p for name, p in found.items() if p} == {}


def test_every_fleet_case_declares_exactly_what_it_reaches() -> None:
    found = {case.id: exact(fleet_needs(case), lambda k, s, case=case: list(replay_case(k, case)))
             for case in fleet_cases()}
    assert {name: p for name, p in found.items() if p} == {}
    # Per case, not whole: most of the corpus is sequential and runs without parallel branches.
    assert sum(1 for case in fleet_cases() if "parallel" not in fleet_needs(case)) > len(fleet_cases()) // 2


def test_every_regression_log_declares_exactly_what_it_reaches() -> None:
    def replayed(operations):
        def drive(kernel: FencedKernel, session: Session) -> None:
            session.reset()
            for op in operations:
                session.apply(op)
        return drive

    found = {}
    for _, log in committed_regressions():
        operations = [from_model(m) for m in log.operations]
        found[log.name] = exact(operations_need(operations), replayed(operations))
    assert {name: p for name, p in found.items() if p} == {}


def test_every_explorer_scenario_declares_exactly_what_it_reaches() -> None:
    def every_letter(scenario):
        def drive(kernel: FencedKernel, session: Session) -> None:
            for letter in scenario.letters:  # each from the setup: every letter is a first step somewhere
                session.reset()
                for op in scenario.setup + (letter,):
                    try:
                        session.apply(op)
                    except ImplementationFailed:
                        pass  # the breach is recorded; the next letter still runs
        return drive

    found = {s.name: exact(set(s.requires), every_letter(s)) for s in scenarios(ALL)}
    assert {name: p for name, p in found.items() if p} == {}
    assert {s.name for s in scenarios(NODE)} == {"two-gates", "three-gates", "two-executions"}


def test_the_legacy_corpus_runs_every_case_its_features_allow(tmp_path: Path) -> None:
    """Over-gating loses coverage: on each set, the cases run are exactly those whose own
    needs are declared (plus the downgrade demonstration where it applies)."""
    for name in ("all-but-parallel", "all-but-recover", "all-but-resume-as", "legacy-with-security"):
        features = SETS[name]
        _, run = walk(features, tmp_path / name, machine_examples=1)
        (record,) = [c for c in run.report.corpora if c.name == "legacy-logs"]
        downgrade = {"fold", "in-doubt", "resume-as", "recover"} <= features
        wanted = sum(1 for c in CASES if case_needs(c) <= features) \
            + sum(1 for c in fleet_cases() if fleet_needs(c) <= features) + downgrade
        assert record.cases == wanted, name


@pytest.mark.parametrize("features", ["fold,recover,load-log", "load-log,legacy-scan,human-steps,security"])
def test_the_whole_catalogue_passes_on_a_fenced_kernel(features: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOMCHECK_FENCE", features)
    fence = Path(__file__).parent / "fakes" / "fence.py"
    report = Run(f"python:{fence}:from_env", load_catalogue(), report_dir=tmp_path).execute()
    assert report.exit_code() == 0, [(r.id, r.status, r.message) for r in report.results
                                     if r.status not in ("pass", "not-applicable")] + report.findings
    assert not any(r.status == "error" for r in report.results)


def test_a_skipped_case_is_counted_apart() -> None:
    result = CorpusResult()
    result.skip(Undeclared("recover x", {"recover"}))
    assert result.cases == 0 and result.skipped == {"recover": 1}


def test_replaying_a_log_a_kernel_cannot_run_says_not_applicable(capsys: pytest.CaptureFixture[str]) -> None:
    from loomcheck.cli import main

    log = Path(__file__).parents[1] / "spec" / "regressions" / "0056-acceptance-criterion-7.json"
    fence = Path(__file__).parent / "fakes" / "fence.py"
    assert main(["replay", str(log), "--impl", f"python:{fence}:node_set"]) == 0
    assert "not applicable" in capsys.readouterr().out
