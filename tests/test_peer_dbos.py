"""Direct fidelity tests of the DBOS adapter (peers/dbos/): each primitive the
adapter maps is driven through the adapter AND checked in DBOS's own records
(DBOSClient on the same system database), so the translation is shown faithful."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("dbos")

from loomcheck.peers.dbos.driver import DbosDriver  # noqa: E402
from peer_logs import types  # noqa: E402

LANG = "loomcheck-flow/1"
TWO_GATES = {"language": LANG, "body": [
    {"op": "step", "id": "a", "output": {"A": 1}},
    {"op": "suspend", "on": "go1", "meta": {"why": "review"}}, {"op": "observe"},
    {"op": "step", "id": "b", "output": "B"},
    {"op": "suspend", "on": "go2"}, {"op": "observe"},
    {"op": "complete", "output": "done"}]}
CRASHING = {"language": LANG, "body": [
    {"op": "step", "id": "a", "output": "A"},
    {"op": "step", "id": "b", "output": "B", "crash": {"at": "before-effect", "attempts": [1]}},
    {"op": "suspend", "on": "go"}, {"op": "observe"},
    {"op": "complete", "output": "ok"}]}


@pytest.fixture(scope="module")
def shared() -> Any:
    driver = DbosDriver()
    yield driver
    driver.close()


@pytest.fixture
def driver(shared: DbosDriver) -> DbosDriver:
    shared.reset()
    return shared


def dbos_steps(driver: DbosDriver, execution: str = "x") -> list[tuple[str, Any]]:
    """DBOS's own checkpoints: (function_name, output), by function id."""
    return [(s["function_name"], s["output"]) for s in driver.session.client().list_workflow_steps(execution)]


def dbos_status(driver: DbosDriver, execution: str = "x") -> str:
    return driver.session.client().retrieve_workflow(execution).get_status().status


def test_step_runs_once_then_replays(driver: DbosDriver) -> None:
    driver.define_flow("f", TWO_GATES)
    assert driver.start("x", "f", {"n": 1}).ok
    assert dbos_steps(driver)[0] == ("a", {"A": 1})  # DBOS checkpointed the step under the program's id
    assert driver.resume("x", "go1", "yes").ok
    assert driver.resume("x", "go2", None).ok
    started = [e["payload"]["stepId"] for e in driver.read_log("x") if e["type"] == "STEP_STARTED"]
    assert started == ["a", "b"]  # each body ran once: DBOS replayed "a" on the later runs
    assert [name for name, _ in dbos_steps(driver) if not name.startswith("DBOS.")] == ["a", "b"]


def test_ith_gate_gets_ith_answer_from_dbos_recv(driver: DbosDriver) -> None:
    driver.define_flow("f", TWO_GATES)
    driver.start("x", "f", None)
    driver.resume("x", "go1", {"approved": 1})
    driver.resume("x", "go2", None)
    observed = [e["payload"] for e in driver.read_log("x") if e["type"] == "loomcheck.observed"]
    assert observed == [{"gate": 0, "on": "go1", "value": {"approved": 1}}, {"gate": 1, "on": "go2", "value": None}]
    assert [out for name, out in dbos_steps(driver) if name == "DBOS.recv"] == [{"approved": 1}, None]
    assert driver.read_state("x")["variables"]["_resumePayloads"] == [{"approved": 1}, None]


def test_park_is_a_workflow_blocked_in_recv(driver: DbosDriver) -> None:
    driver.define_flow("f", TWO_GATES)
    driver.start("x", "f", None)
    assert types(driver) == ["EXECUTION_STARTED", "STEP_STARTED", "STEP_COMPLETED", "EXECUTION_SUSPENDED"]
    assert driver.read_log("x")[-1]["payload"] == {"condition": {"why": "review", "on": "go1"}}
    state = driver.read_state("x")
    assert (state["status"], state["suspendedOn"]) == ("suspended", {"why": "review", "on": "go1"})
    # DBOS's records: PENDING, recv's durable timeout checkpointed, recv itself not yet
    assert dbos_status(driver) == "PENDING"
    assert [name for name, _ in dbos_steps(driver)] == ["a", "DBOS.sleep"]


def test_completion_is_the_workflow_result(driver: DbosDriver) -> None:
    driver.define_flow("f", TWO_GATES)
    driver.start("x", "f", {"n": 2})
    driver.resume("x", "go1", 1)
    driver.resume("x", "go2", 2)
    assert dbos_status(driver) == "SUCCESS"
    assert driver.session.client().retrieve_workflow("x").get_result() == "done"
    state = driver.read_state("x")
    assert (state["status"], state["output"], state["variables"]["_input"]) == ("completed", "done", {"n": 2})
    assert types(driver)[-1] == "EXECUTION_COMPLETED"


def test_crash_kills_the_worker_and_dbos_launch_recovers(driver: DbosDriver) -> None:
    driver.define_flow("f", CRASHING)
    outcome = driver.start("x", "f", None)
    assert outcome.ok and outcome.crashed
    assert driver.session.worker is not None and not driver.session.worker.alive()  # a real process death
    assert dbos_status(driver) == "PENDING" and [n for n, _ in dbos_steps(driver)] == ["a"]
    assert driver.read_state("x")["status"] == "running"
    assert driver.recover_abandoned() == ["x"]  # relaunch: DBOS.launch() re-drove it
    log = driver.read_log("x")
    assert [e["type"] for e in log][4:] == ["EXECUTION_RECOVERED", "STEP_STARTED", "STEP_COMPLETED",
                                            "EXECUTION_SUSPENDED"]
    assert log[5]["payload"] == {"stepId": "b", "attempt": 2}
    assert driver.resume("x", "go", "fine").ok
    assert driver.read_state("x")["status"] == "completed"


def test_unknown_execution_is_refused_by_dbos_send(driver: DbosDriver) -> None:
    outcome = driver.resume("nobody", "go", 1)
    assert (outcome.ok, outcome.reason) == (False, "unknown-execution")
    assert "Non-existent" in outcome.message  # DBOSNonExistentWorkflowError


def test_early_send_waits_in_the_mailbox(driver: DbosDriver) -> None:
    """Documented divergence: DBOS accepts an answer for another gate; it waits for that recv."""
    driver.define_flow("f", TWO_GATES)
    driver.start("x", "f", None)
    assert driver.resume("x", "go2", "early").ok
    assert driver.read_state("x")["suspendedOn"] == {"why": "review", "on": "go1"}  # still in recv(go1)
    driver.resume("x", "go1", "first")
    observed = [e["payload"]["value"] for e in driver.read_log("x") if e["type"] == "loomcheck.observed"]
    assert observed == ["first", "early"]  # recv(go2) consumed the early message at once
    assert dbos_status(driver) == "SUCCESS"


def test_send_to_finished_workflow_is_accepted_and_never_consumed(driver: DbosDriver) -> None:
    driver.define_flow("f", TWO_GATES)
    driver.start("x", "f", None)
    driver.resume("x", "go1", 1)
    driver.resume("x", "go2", 2)
    assert driver.resume("x", "go1", "late").ok
    assert driver.resume("x", "go2", "later").ok
    assert types(driver)[-5:] == ["EXECUTION_COMPLETED", "go1", "EXECUTION_RESUMED", "go2", "EXECUTION_RESUMED"]
    assert [out for name, out in dbos_steps(driver) if name == "DBOS.recv"] == [1, 2]


def test_duplicate_start_is_dbos_idempotent_start(driver: DbosDriver) -> None:
    driver.define_flow("f", TWO_GATES)
    driver.start("x", "f", {"n": 1})
    assert driver.start("x", "f", {"n": 2}).ok
    assert types(driver).count("EXECUTION_STARTED") == 1
    assert driver.read_state("x")["variables"]["_input"] == {"n": 1}


def test_durable_store_survives_a_new_adapter_process(tmp_path: Any) -> None:
    first = DbosDriver(str(tmp_path))
    first.reset()
    first.define_flow("f", TWO_GATES)
    first.start("x", "f", None)
    first.resume("x", "go1", "one")
    before = first.read_log("x")
    first.session.zygote.process.kill()  # as SIGKILL of the served adapter: the zygote dies, its worker with it
    first.session.zygote.process.wait()
    deadline = time.monotonic() + 5
    while first.session.worker.alive() and time.monotonic() < deadline:  # PR_SET_PDEATHSIG
        time.sleep(0.01)
    assert not first.session.worker.alive()
    second = DbosDriver(str(tmp_path))
    try:
        assert second.read_log("x") == before
        assert second.recover_abandoned() == []  # parked: DBOS re-runs it to the same recv, invisibly
        assert second.read_log("x") == before
        assert second.resume("x", "go2", "two").ok
        assert second.read_state("x")["status"] == "completed"
    finally:
        second.close()
        first.close()


def test_reset_after_a_crash_recovers_nothing(driver: DbosDriver) -> None:
    driver.define_flow("f", CRASHING)
    assert driver.start("x", "f", None).crashed
    driver.reset()  # no live worker: the next one empties the store before DBOS.launch() recovers
    assert driver.read_log("x") == [] and driver.session.status("x") is None
    driver.define_flow("f", TWO_GATES)
    assert driver.start("x", "f", None).ok and driver.read_state("x")["status"] == "suspended"
