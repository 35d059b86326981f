"""The LangGraph adapter maps each primitive faithfully (checked against LangGraph's own
API, not only through the adapter), the divergences in results/peers/langgraph/ANALYSIS.md
are LangGraph's own behaviour (each shown here directly, in a few calls), and the suite
catches a mapping that breaks a primitive."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: E402
from langgraph.func import entrypoint, task  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

from loomcheck.peers.langgraph import LangGraphDriver, make, make_raw  # noqa: E402
from peer_logs import observed, types  # noqa: E402
from loomcheck.cli import main  # noqa: E402

TWO_GATES = {"body": [{"op": "step", "id": "plan", "output": {"plan": "p"}},
                      {"op": "suspend", "on": "go1", "meta": {"why": "first"}}, {"op": "observe"},
                      {"op": "suspend", "on": "go2"}, {"op": "observe"},
                      {"op": "complete", "output": "done"}]}


@pytest.fixture
def driver() -> Any:
    d = make()
    assert d.define_flow("f", TWO_GATES).ok
    yield d
    d.close()


# -- each primitive, through the adapter and in LangGraph's own records ------------------------
def test_a_step_is_a_task_that_langgraph_runs_once_and_replays(driver: LangGraphDriver) -> None:
    assert driver.start("x", "f", {"n": 1}).ok
    assert driver.resume("x", "go1", "a").ok
    assert driver.resume("x", "go2", "b").ok
    # The body ran once (one STEP_STARTED) although the entrypoint ran three times.
    assert types(driver, "x").count("STEP_STARTED") == 1
    # LangGraph itself holds the step's result as the task's __return__ write.
    returns = [value for channel, value in driver._input_writes("x") if channel == "__return__"]
    assert returns == [{"stepId": "plan", "output": {"plan": "p"}}]
    assert driver.read_state("x")["steps"] == {"plan": {"status": "completed", "attempt": 1, "output": {"plan": "p"}}}


def test_the_ith_interrupt_receives_the_ith_answer_and_parks_with_its_condition(driver: LangGraphDriver) -> None:
    assert driver.start("x", "f", None).ok
    snapshot = driver.graph.get_state(driver._config("x"))
    assert [i.value for t in snapshot.tasks for i in t.interrupts] == [{"why": "first", "on": "go1"}]
    assert driver.read_state("x")["suspendedOn"] == {"why": "first", "on": "go1"}
    assert driver.read_log("x")[-1] == {"seq": 4, "type": "EXECUTION_SUSPENDED",
                                        "payload": {"condition": {"why": "first", "on": "go1"}}}
    assert driver.resume("x", "go1", {"first": True}).ok
    assert driver.resume("x", "go2", [2]).ok
    assert observed(driver, "x") == [{"gate": 0, "on": "go1", "value": {"first": True}},
                                     {"gate": 1, "on": "go2", "value": [2]}]
    state = driver.read_state("x")
    assert state["status"] == "completed"
    assert state["output"] == "done" == driver.graph.get_state(driver._config("x")).values
    assert state["variables"]["_input"] is None  # the input travels wrapped, because LangGraph reads None as "continue"


def test_a_crash_in_a_task_and_langgraphs_recovery() -> None:
    d = make()
    program = {"body": [{"op": "step", "id": "s", "output": 1, "crash": {"at": "before-effect", "attempts": [1]}},
                        {"op": "suspend", "on": "go"}, {"op": "observe"}]}
    assert d.define_flow("f", program).ok
    assert d.start("x", "f", None).crashed
    snapshot = d.graph.get_state(d._config("x"))
    assert [t.error for t in snapshot.tasks] and all("WorkerCrash" in str(t.error) for t in snapshot.tasks)
    assert d.read_state("x")["status"] == "running"
    assert d.recover_abandoned() == ["x"]
    starts = [e["payload"] for e in d.read_log("x") if e["type"] == "STEP_STARTED"]
    assert starts == [{"stepId": "s", "attempt": 1}, {"stepId": "s", "attempt": 2}]
    assert d.read_state("x")["status"] == "suspended"
    assert d.recover_abandoned() == []  # parked now: skipped
    d.close()


def test_guarded_refuses_from_langgraphs_report_and_appends_nothing(driver: LangGraphDriver) -> None:
    assert driver.start("x", "f", None).ok
    before = driver.read_log("x")
    assert driver.resume("x", "go2", 1).reason == "gate-mismatch"
    assert driver.resume("x", "EXECUTION_COMPLETED", 1).reason == "kernel-namespace"
    assert driver.recover("x").reason == "not-suspended"
    assert driver.read_log("x") == before


def test_raw_passes_a_misaddressed_answer_to_langgraph_which_takes_it() -> None:
    d = make_raw()
    assert d.define_flow("f", TWO_GATES).ok
    assert d.start("x", "f", None).ok
    assert d.resume("x", "go2", "meant for go2").ok  # LangGraph's resume names no gate
    assert observed(d, "x") == [{"gate": 0, "on": "go1", "value": "meant for go2"}]
    d.close()


# -- the divergences: results/peers/langgraph/repro/, run by tests/test_peer_repros.py; here, a sharp edge --
def test_finding_get_state_after_a_crash_reports_the_answered_interrupt_as_pending() -> None:
    """Why the adapter reads parked-or-crashed from invoke's return: after a run that raised
    past an answered interrupt, get_state lists that interrupt beside the error."""
    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    crash = [True]

    @task
    def effect() -> int:
        if crash.pop() if crash else False:
            raise RuntimeError("worker died")
        return 1

    @entrypoint(checkpointer=saver)
    def flow(_: Any) -> Any:
        answer = interrupt({"on": "go1"})
        effect().result()
        return answer

    config = {"configurable": {"thread_id": "t"}}
    flow.invoke({}, config)
    with pytest.raises(RuntimeError):
        flow.invoke(Command(resume={flow.get_state(config).tasks[0].interrupts[0].id: "A"}), config)
    tasks = flow.get_state(config).tasks
    assert [i.value for t in tasks for i in t.interrupts] == [{"on": "go1"}]
    assert any(t.error for t in tasks)
    assert flow.invoke(None, config) == "A"  # the recovery itself is right


# -- the suite catches a mapping that breaks a primitive ----------------------------------------
class NoReplayDriver(LangGraphDriver):
    """A broken mapping: steps called as plain functions, not LangGraph tasks."""

    def _open(self) -> None:
        super()._open()
        import loomcheck.peers.langgraph as module

        self._saved_step = module._step

        class Plain:
            def __init__(self, value: Any) -> None:
                self.value = value

            def result(self) -> Any:
                return self.value

        module._step = lambda step_id, body: Plain({"stepId": step_id, "output": body()})

    def close(self) -> None:
        import loomcheck.peers.langgraph as module

        module._step = self._saved_step
        super().close()


def make_no_replay() -> NoReplayDriver:
    return NoReplayDriver()


def test_the_suite_catches_a_step_that_langgraph_does_not_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    import loomcheck.peers.langgraph as module

    # The run may leave a driver unclosed, and with it the patched step: restored here whatever happens.
    monkeypatch.setattr(module, "_step", module._step)
    code = main(["run", "--impl", "python:test_peer_langgraph:make_no_replay", "--only", "replay.step-runs-once",
                 "--report", str(tmp_path)])
    capsys.readouterr()
    report = json.loads((tmp_path / "report.json").read_text())
    record = next(r for r in report["results"] if r["id"] == "replay.step-runs-once")
    assert code == 1 and record["status"] == "fail", record
    assert "re-executed" in record["message"]


def test_why_typed_answers_do_not_apply_langgraph_does_not_validate_a_response_schema() -> None:
    """ADR 0077 needs a declared answer shape enforced before anything is recorded. An
    interrupt's response_schema is surfaced to clients only: a non-matching answer is taken."""
    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    schema = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}

    @entrypoint(checkpointer=saver)
    def flow(_: Any) -> Any:
        return interrupt({"on": "go"}, response_schema=schema)

    config = {"configurable": {"thread_id": "t"}}
    returned = flow.invoke({}, config)
    assert returned["__interrupt__"][0].response_schema == schema
    assert flow.invoke(Command(resume={returned["__interrupt__"][0].id: "not an object"}), config) == "not an object"
