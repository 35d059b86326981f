"""The Prefect adapter maps each primitive faithfully (checked against Prefect's own API and
records, not only through the adapter), and the divergences in the manifest are Prefect's own
behaviour (each shown here directly, in a few calls).

Prefect runs in its own venv (/tmp/prefectvenv in development; a `prefect` profile, not CI):
these tests are skipped where Prefect is not installed. One loopback Prefect server is started
for the module (about 15 s, once); every test after that takes a few seconds.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("prefect")

from prefect.client.orchestration import get_client  # noqa: E402
from prefect.flow_runs import resume_flow_run  # noqa: E402
from prefect.results import ResultStore  # noqa: E402

from loomcheck.peers.prefect.driver import PrefectDriver, make  # noqa: E402
from loomcheck.peers.prefect.glue import step_key  # noqa: E402
from peer_logs import observed, types  # noqa: E402

TWO_GATES = {"body": [{"op": "step", "id": "plan", "output": {"plan": "p"}},
                      {"op": "suspend", "on": "go1", "meta": {"why": "first"}}, {"op": "observe"},
                      {"op": "suspend", "on": "go2"}, {"op": "observe"},
                      {"op": "complete", "output": "done"}]}


def flow_run(driver: PrefectDriver, execution: str) -> Any:
    """Prefect's own record of the execution's flow run."""
    with get_client(sync_client=True) as client:
        return client.read_flow_run(driver.session.runs[execution])


@pytest.fixture(scope="module")
def server() -> Any:
    d = make()
    yield d
    d.close()


@pytest.fixture
def driver(server: PrefectDriver) -> Any:
    server.reset()
    server.session.guarded = True  # make()
    assert server.define_flow("f", TWO_GATES).ok
    return server


@pytest.fixture
def raw(driver: PrefectDriver) -> Any:
    driver.session.guarded = False  # make_raw(): every call straight to Prefect (one server per process)
    return driver


# -- each primitive, through the adapter and in Prefect's own records ---------------------------
def test_a_step_is_a_cached_task_that_prefect_runs_once_and_replays(driver: PrefectDriver) -> None:
    assert driver.start("x", "f", {"n": 1}).ok
    assert driver.resume("x", "go1", "a").ok
    assert driver.resume("x", "go2", "b").ok
    # The flow ran three times; the task's body once (one STEP_STARTED).
    assert types(driver, "x").count("STEP_STARTED") == 1
    # Prefect's result store holds the step's value under the flow run's key.
    record = ResultStore().read(step_key(driver.session.runs["x"], "plan"))
    assert record.result == {"stepId": "plan", "output": {"plan": "p"}}
    assert driver.read_state("x")["steps"] == {"plan": {"status": "completed", "attempt": 1, "output": {"plan": "p"}}}


def test_the_ith_suspend_receives_the_ith_answer_and_parks_with_its_condition(driver: PrefectDriver) -> None:
    assert driver.start("x", "f", None).ok
    run = flow_run(driver, "x")
    assert (run.state.type.value, run.state.name, run.state.state_details.pause_key) == ("PAUSED", "Suspended", "1")
    with get_client(sync_client=True) as client:  # the condition, as Prefect stored it beside the schema
        described = client.read_flow_run_input(run.id, run.state.state_details.run_input_keyset["description"])
    assert "go1" in described and "first" in described
    assert driver.read_state("x")["suspendedOn"] == {"why": "first", "on": "go1"}
    assert driver.read_log("x")[-1]["payload"] == {"condition": {"why": "first", "on": "go1"}}
    assert driver.resume("x", "go1", {"first": True}).ok
    assert flow_run(driver, "x").state.state_details.pause_key == "2"  # Prefect's own count of pauses
    assert driver.resume("x", "go2", [2]).ok
    assert observed(driver, "x") == [{"gate": 0, "on": "go1", "value": {"first": True}},
                                     {"gate": 1, "on": "go2", "value": [2]}]
    run = flow_run(driver, "x")
    assert run.empirical_policy.pause_keys == {"1", "2"}
    assert run.state.is_completed() and run.state.result() == "done"
    state = driver.read_state("x")
    assert state["status"] == "completed" and state["output"] == "done"
    assert state["variables"]["_resumePayloads"] == [{"first": True}, [2]]
    assert state["variables"]["_input"] is None and run.parameters["input"] is None


def test_prefect_refuses_a_resume_of_a_run_that_is_not_paused(driver: PrefectDriver) -> None:
    assert driver.start("x", "f", None).ok
    assert driver.resume("x", "go1", 1).ok
    assert driver.resume("x", "go2", 2).ok
    before = driver.read_log("x")
    outcome = driver.resume("x", "go2", 3)
    assert (outcome.ok, outcome.reason) == (False, "not-suspended")  # NotPausedError, Prefect's
    assert driver.read_log("x") == before
    assert driver.resume("nobody", "go1", 1).reason == "unknown-execution"


def test_prefect_validates_the_run_input_against_the_stored_schema(driver: PrefectDriver) -> None:
    assert driver.start("x", "f", None).ok
    with pytest.raises(RuntimeError, match="Reason:"):
        resume_flow_run(driver.session.runs["x"], run_input={"wrong": 1})  # no `value`: the server rejects it
    assert flow_run(driver, "x").state.is_paused()


# -- the divergences, in Prefect's own behaviour -------------------------------------------------
def test_guarded_refuses_from_prefects_report_and_appends_nothing(driver: PrefectDriver) -> None:
    assert driver.start("x", "f", None).ok
    before = driver.read_log("x")
    assert driver.resume("x", "go2", 1).reason == "gate-mismatch"  # Prefect's stored condition names go1
    assert driver.resume("x", "EXECUTION_COMPLETED", 1).reason == "kernel-namespace"
    assert driver.recover("x").reason == "not-suspended"  # Prefect reports the run PAUSED
    assert driver.read_log("x") == before
    assert flow_run(driver, "x").state.is_paused()


def test_prefect_resume_names_no_gate_so_a_misaddressed_answer_is_taken(raw: PrefectDriver) -> None:
    assert raw.start("x", "f", None).ok
    # ADR 0104 D1 (gate-mismatch, kernel-namespace): resume_flow_run has no gate or event type.
    assert raw.resume("x", "EXECUTION_COMPLETED", "meant for go2").ok
    assert observed(raw, "x") == [{"gate": 0, "on": "go1", "value": "meant for go2"}]


def test_a_refused_kernel_emit_fails_the_flow_run_in_prefect(driver: PrefectDriver) -> None:
    assert driver.define_flow("bad", {"body": [{"op": "emit", "type": "EXECUTION_COMPLETED", "payload": 1}]}).ok
    assert driver.start("y", "bad", None).ok
    assert flow_run(driver, "y").state.is_failed()
    assert driver.read_state("y")["status"] == "failed"
    assert "EXECUTION_COMPLETED" not in types(driver, "y")


# -- crash faults and Prefect's retry ----------------------------------------------------------
CRASHING = {"body": [{"op": "step", "id": "a", "output": 1},
                     {"op": "suspend", "on": "go1"}, {"op": "observe"},
                     {"op": "step", "id": "s", "output": 2, "crash": {"at": "before-effect", "attempts": [1]}},
                     {"op": "suspend", "on": "go2"}, {"op": "observe"}, {"op": "complete", "output": "done"}]}


def test_a_crash_fault_is_a_crashed_flow_run_and_prefects_retry_redrives_it(driver: PrefectDriver) -> None:
    assert driver.define_flow("c", CRASHING).ok
    assert driver.start("x", "c", None).ok
    assert driver.resume("x", "go1", "A").crashed
    assert flow_run(driver, "x").state.is_crashed()
    assert driver.read_state("x")["status"] == "running"
    assert driver.recover_abandoned() == ["x"]
    starts = [e["payload"] for e in driver.read_log("x") if e["type"] == "STEP_STARTED"]
    assert starts == [{"stepId": "a", "attempt": 1}, {"stepId": "s", "attempt": 1}]  # `a` replayed from the cache
    assert driver.recover_abandoned() == []


def test_prefects_retry_resets_the_pause_keys_so_an_answered_gate_parks_again(driver: PrefectDriver) -> None:
    # ADR 0104 D1 / ADR 0057: a recovery must leave the answer list unchanged. Prefect's retry
    # leaves a terminal state, which clears the run's pause keys; the first pause fires anew
    # and Prefect deletes the input stored under its key.
    assert driver.define_flow("c", CRASHING).ok
    assert driver.start("x", "c", None).ok
    assert driver.resume("x", "go1", "A").crashed
    assert flow_run(driver, "x").empirical_policy.pause_keys == {"1"}
    assert driver.recover("x").ok
    run = flow_run(driver, "x")
    assert run.state.is_paused() and run.state.state_details.pause_key == "1"
    assert driver.read_state("x")["variables"].get("_resumePayloads") is None  # 'A' is gone from Prefect


def test_prefect_rejects_a_retry_of_a_completed_run_and_accepts_one_of_a_paused_run(raw: PrefectDriver) -> None:
    assert raw.start("x", "f", None).ok
    assert raw.resume("x", "go1", 1).ok and raw.resume("x", "go2", 2).ok
    assert raw.recover("x").reason == "terminal"  # "Run is already COMPLETED."
    assert raw.start("y", "f", None).ok
    # ADR 0104 D4 (a recovery of a parked execution is refused): Prefect takes it, and the re-run
    # finds pause key 1 fired with no input stored, so loading the gate's input fails the run.
    assert raw.recover("y").ok
    assert flow_run(raw, "y").state.is_failed()
