"""The LlamaIndex Workflows adapter maps each primitive faithfully (checked against LlamaIndex's
own records, the serialized context, not only through the adapter), and the divergences in
adapters/manifests/llamaindex.toml are LlamaIndex's own behaviour: each is shown here directly
on a plain workflow, with no adapter in the way, in a few calls."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("workflows")

from workflows import Context  # noqa: E402
from workflows.events import HumanResponseEvent  # noqa: E402

from loomcheck.peers.llamaindex import GATES_KEY, STEPS_KEY, LlamaIndexDriver, make, waiter_id  # noqa: E402
from peer_logs import observed, types  # noqa: E402

TWO_GATES = {"body": [{"op": "step", "id": "plan", "output": {"plan": "p"}},
                      {"op": "suspend", "on": "go1", "meta": {"why": "first"}}, {"op": "observe"},
                      {"op": "suspend", "on": "go2"}, {"op": "observe"},
                      {"op": "input"},
                      {"op": "complete", "output": "done"}]}


def saved(driver: LlamaIndexDriver, execution: str) -> dict[str, Any]:
    """LlamaIndex's own durable state: the context it serialized (Context.to_dict)."""
    return json.loads(driver._saved[execution])


def waiters(context: dict[str, Any]) -> list[dict[str, Any]]:
    return [w for worker in context["workers"].values() for w in worker["collected_waiters"]]


@pytest.fixture
def driver() -> Any:
    d = make()
    assert d.define_flow("f", TWO_GATES).ok
    yield d
    d.close()


# -- each primitive, through the adapter and in LlamaIndex's own records -----------------------
def test_a_gate_is_a_waiter_and_the_park_is_the_saved_idle_context(driver: LlamaIndexDriver) -> None:
    assert driver.start("x", "f", {"n": 1}).ok
    assert types(driver, "x")[-1] == "EXECUTION_SUSPENDED"
    assert driver.read_log("x")[-1]["payload"] == {"condition": {"why": "first", "on": "go1"}}
    context = saved(driver, "x")
    assert context["is_running"] is True  # LlamaIndex saved a running, idle workflow
    [waiter] = waiters(context)
    assert waiter["waiter_id"] == waiter_id(0, {"why": "first", "on": "go1"})
    assert waiter["resolved_event"] is None and waiter["has_requirements"] is True
    state = driver.read_state("x")
    assert state["status"] == "suspended" and state["suspendedOn"] == {"why": "first", "on": "go1"}
    assert state["variables"]["_input"] == {"n": 1}


def test_answers_are_sent_events_that_resolve_waiters_as_llamaindex_matches_them(driver: LlamaIndexDriver) -> None:
    assert driver.start("x", "f", {"n": 1}).ok
    assert driver.resume("x", "go1", "a").ok
    # LlamaIndex keeps the resolved waiter (with its event) until the step completes.
    resolved = [w for w in waiters(saved(driver, "x")) if w["resolved_event"] is not None]
    assert [json.loads(w["resolved_event"])["value"]["_data"] for w in resolved] == [{"on": "go1", "response": "a"}]
    assert driver.read_state("x")["variables"]["_resumePayloads"] == ["a"]
    assert driver.read_state("x")["suspendedOn"] == {"on": "go2"}
    assert driver.resume("x", "go2", "b").ok
    # After the restore, gate 0's waiter has lost its requirements: "go2" resolved it again,
    # so gate 0 passed with "b" on the last run (ADR 0057 divergence, shown directly below).
    assert [(o["gate"], o["value"]) for o in observed(driver, "x")] == [(0, "a"), (0, "b"), (1, "b")]
    assert driver.read_log("x")[-1] == {"seq": len(driver.read_log("x")), "type": "EXECUTION_COMPLETED",
                                        "payload": {"output": "done"}}
    state = driver.read_state("x")
    assert state["status"] == "completed" and state["output"] == "done"
    assert state["variables"]["_resumePayloads"] == ["b", "b"]  # what the peer handed each gate on its last run
    assert saved(driver, "x")["is_running"] is False and waiters(saved(driver, "x")) == []
    gates = json.loads(saved(driver, "x")["state"]["state_data"]["_data"][GATES_KEY])
    assert gates == {"0": "b", "1": "b"}


def test_a_step_body_runs_on_every_run_of_the_llamaindex_step(driver: LlamaIndexDriver) -> None:
    assert driver.start("x", "f", None).ok
    assert driver.resume("x", "go1", "a").ok
    starts = types(driver, "x").count("STEP_STARTED")
    assert starts >= 3  # start, the restore's re-ping, the run the answer resumed
    runs = json.loads(saved(driver, "x")["state"]["state_data"]["_data"][STEPS_KEY])["plan"]["runs"]
    assert runs == starts  # the peer's store counts the same runs the witness saw
    assert driver.read_state("x")["steps"]["plan"] == {"status": "completed", "attempt": starts,
                                                       "output": {"plan": "p"}}


def test_an_answer_no_waiter_matches_is_dropped_and_reported_unhandled(driver: LlamaIndexDriver) -> None:
    assert driver.start("x", "f", None).ok
    before = driver._saved["x"]
    outcome = driver.resume("x", "go2", "early")
    assert (outcome.ok, outcome.reason) == (False, "gate-mismatch")
    assert "UnhandledEvent" in outcome.message
    assert driver._saved["x"] == before  # the durable state is the context saved at the park
    assert "go2" not in types(driver, "x")
    assert driver.read_state("x")["suspendedOn"] == {"why": "first", "on": "go1"}


def test_unknown_execution_is_the_one_refusal_the_adapter_makes(driver: LlamaIndexDriver) -> None:
    outcome = driver.resume("nobody", "go1", 1)
    assert (outcome.ok, outcome.reason) == (False, "unknown-execution")


# -- the divergences: results/peers/llamaindex/repro/, run by tests/test_peer_repros.py; here, a sharp edge -
def _repro_helpers() -> Any:
    """The workflow and helpers the committed reproducers use (results/peers/llamaindex/repro/two_gates.py)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "results/peers/llamaindex/repro/two_gates.py"
    spec = importlib.util.spec_from_file_location("llamaindex_two_gates", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_resume_pattern_loses_the_answer_to_the_restore_re_ping() -> None:
    """The docs restore, run, and send the answer at once. With a requirement on the wait, the
    restore re-runs the step to learn it again, and that re-run re-registers the waiter
    unresolved after the answer resolved it: the run idles with no answer taken. (The adapter
    waits for the restored run to idle first, which is why its resumes reach the gate.)"""
    helpers = _repro_helpers()

    async def scenario() -> list[bool]:
        workflow = helpers.gates(["go1"])
        handler = workflow.run()
        await helpers.quiet(handler)
        context = handler.ctx.to_dict()
        await handler.cancel_run()
        handler = workflow.run(ctx=Context.from_dict(workflow, json.loads(json.dumps(context))))
        handler.ctx.send_event(HumanResponseEvent(on="go1", response="a"))
        assert await helpers.quiet(handler) == "idle"
        resolved = [w["resolved_event"] is not None for w in waiters(handler.ctx.to_dict())]
        await handler.cancel_run()
        return resolved

    assert asyncio.run(scenario()) == [False]
