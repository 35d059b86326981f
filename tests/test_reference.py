"""The reference kernel's semantics of gates (ADR 0057, its legacy fallback), replay and
emits, driven through `ReferenceDriver(store="memory")` the way the suite drives any
implementation, and through the flow context where the point is an internal. Refusals:
tests/test_reference_refusals.py; the fold: tests/test_reference_fold.py."""

from __future__ import annotations

import pytest

from loomcheck.reference.context import FlowContext, Park, World
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import Event
from loomcheck.reference.fold import State
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.spec.programs import FlowProgram, StepOp
from loomcheck.spec.vocabulary import vocabulary

from driving import (
    JSON, KERNEL_TYPES, REFUSAL_ERRORS, OBSERVE, program, gate, step, emit, complete, driver, define,
    ok, log_types, observed, status, refused_unchanged, two_gate_flow,
)


# --------------------------------------------------------------------------- ADR 0057: gates


def test_two_sequential_gates_each_receive_their_own_answer(driver: ReferenceDriver) -> None:
    """ADR 0057 Decision: the i-th suspend point in a re-run takes answer i (two-gate ordering)."""
    two_gate_flow(driver)
    ok(driver.start("x", "two", None))
    ok(driver.resume("x", "go1", {"by": "ann"}))
    assert observed(driver, "x") == [{"gate": 0, "on": "go1", "value": {"by": "ann"}}]
    assert driver.read_state("x")["suspendedOn"] == {"on": "go2"}
    ok(driver.resume("x", "go2", {"by": "bob"}))
    # gate 1 re-ran with ann's answer (no second, different observation), gate 2 got bob's
    assert observed(driver, "x") == [
        {"gate": 0, "on": "go1", "value": {"by": "ann"}},
        {"gate": 1, "on": "go2", "value": {"by": "bob"}},
    ]
    final = driver.read_state("x")
    assert final["status"] == "completed"
    assert final["output"] == "done"


def test_three_gates_complete_after_exactly_three_resumes(driver: ReferenceDriver) -> None:
    """ADR 0057 Consequences: n sequential gates complete after exactly n accepted resumes."""
    define(driver, "three", gate("g1"), gate("g2"), gate("g3"), complete("ok"))
    ok(driver.start("x", "three", None))
    for n, on in enumerate(("g1", "g2"), start=1):
        ok(driver.resume("x", on, n))
        assert status(driver, "x") == "suspended"
    ok(driver.resume("x", "g3", 3))
    assert status(driver, "x") == "completed"
    assert log_types(driver, "x").count("EXECUTION_RESUMED") == 3
    refused_unchanged(driver, "x", lambda: driver.resume("x", "g3", 4), "not-suspended")


def test_gates_sharing_one_name(driver: ReferenceDriver) -> None:
    """ADR 0057 Alternatives: keying answers by the condition name was rejected; gates may share a name."""
    define(driver, "same", gate("approve"), OBSERVE, gate("approve"), OBSERVE, gate("approve"), OBSERVE)
    ok(driver.start("x", "same", None))
    for n in (1, 2, 3):
        assert driver.read_state("x")["suspendedOn"] == {"on": "approve"}
        ok(driver.resume("x", "approve", {"n": n}))
    assert observed(driver, "x") == [{"gate": i, "on": "approve", "value": {"n": i + 1}} for i in range(3)]
    assert status(driver, "x") == "completed"


def test_gate_past_the_answers_parks_and_fold_lists_answers(driver: ReferenceDriver) -> None:
    """ADR 0057 Decision: a gate beyond the recorded resumes parks; _resumePayloads is ordered, _resumePayload latest."""
    define(driver, "three", gate("g1"), gate("g2"), gate("g3"))
    ok(driver.start("x", "three", None))
    assert driver.read_log("x")[-1] == {"seq": 2, "type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "g1"}}}
    assert "_resumePayloads" not in driver.read_state("x")["variables"]
    ok(driver.resume("x", "g1", "a"))
    ok(driver.resume("x", "g2", ["b"]))
    last = driver.read_log("x")[-1]
    assert last["type"] == "EXECUTION_SUSPENDED"
    assert last["payload"] == {"condition": {"on": "g3"}}
    state = driver.read_state("x")
    assert state["status"] == "suspended"
    assert state["suspendedOn"] == {"on": "g3"}
    assert state["variables"]["_resumePayloads"] == ["a", ["b"]]
    assert state["variables"]["_resumePayload"] == ["b"]


def test_accepted_resume_records_event_then_resumed(driver: ReferenceDriver) -> None:
    """ADR 0104 D1: an answer to the parked gate records the resume-typed event, then EXECUTION_RESUMED(payload)."""
    define(driver, "one", gate("go1"))
    ok(driver.start("x", "one", None))
    ok(driver.resume("x", "go1", None))
    log = driver.read_log("x")
    assert log[2:4] == [{"seq": 3, "type": "go1", "payload": None},
                        {"seq": 4, "type": "EXECUTION_RESUMED", "payload": None}]
    # parked at a gate, a null IS an answer (ADR 0104 D3 keys on the state, not on null alone)
    assert driver.read_state("x")["variables"]["_resumePayloads"] == [None]


# --------------------------------------------------------------------------- ADR 0057: legacy fallback


def test_context_reads_legacy_single_payload_as_one_entry_list() -> None:
    """ADR 0057 Legacy fallback: a pre-1.16 state with only _resumePayload is a one-entry answer list."""
    appended: list[tuple[str, JSON]] = []

    def append(event_type: str, payload: JSON) -> Event:
        appended.append((event_type, payload))
        return Event("x", len(appended), event_type, payload)

    state = State(status="running", flow_id="f", variables={"_resumePayload": {"approved": True}})
    ctx = FlowContext(state, [], append)
    assert ctx.answers() == [{"approved": True}]
    assert ctx.suspend("ApprovalGranted") == {"approved": True}
    with pytest.raises(Park) as parked:
        ctx.suspend("next")
    assert parked.value.condition == {"on": "next"}
    assert appended == []


def test_context_with_no_answers_parks_at_first_gate() -> None:
    """ADR 0057 Legacy fallback: with neither _resumePayloads nor _resumePayload the first gate parks."""
    ctx = FlowContext(State(status="running", variables={"_input": 1}), [], lambda t, p: Event("x", 1, t, p))
    assert ctx.answers() == []
    with pytest.raises(Park) as parked:
        ctx.suspend("go1")
    assert parked.value.condition == {"on": "go1"}


def test_context_prefers_the_list_over_the_legacy_key() -> None:
    """ADR 0057 Decision: when both keys exist the ordered list is authoritative."""
    state = State(variables={"_resumePayloads": ["a", "b"], "_resumePayload": "b"})
    ctx = FlowContext(state, [], lambda t, p: Event("x", 1, t, p))
    assert [ctx.suspend("g"), ctx.suspend("g")] == ["a", "b"]


def test_legacy_snapshot_recovers_past_its_gate(driver: ReferenceDriver) -> None:
    """ADR 0057 Legacy fallback + ADR 0104 D1: recovery of a pre-1.16 snapshot passes the gate with
    _resumePayload and records EXECUTION_RECOVERED {} and no EXECUTION_RESUMED."""
    define(driver, "single", gate("ApprovalGranted"), OBSERVE, step("apply", "applied"), complete("ok"))
    answer = {"approved": True, "approvedBy": "ann"}
    snapshot = {"sequence": 4, "status": "running", "flowId": "single", "suspendedOn": None,
                "variables": {"_input": {"ticket": 7}, "_resumePayload": answer},
                "steps": {}, "output": None, "error": None}
    ok(driver.load("x", [], snapshot))
    assert driver.read_log("x") == []
    ok(driver.recover("x"))
    log = driver.read_log("x")
    assert log[0] == {"seq": 5, "type": "EXECUTION_RECOVERED", "payload": {}}
    assert "EXECUTION_RESUMED" not in [e["type"] for e in log]
    assert observed(driver, "x") == [{"gate": 0, "on": "ApprovalGranted", "value": answer}]
    state = driver.read_state("x")
    assert state["status"] == "completed"
    assert state["output"] == "ok"
    assert state["sequence"] == log[-1]["seq"] == 9


def test_recovery_of_crashed_execution_answers_no_gate(driver: ReferenceDriver) -> None:
    """ADR 0104 D1: a crashed execution is re-driven with EXECUTION_RECOVERED {} only; its next gate parks."""
    define(driver, "f", step("a", 1), gate("go1"), OBSERVE)
    ok(driver.load("x", [{"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f", "input": None}},
                         {"seq": 2, "type": "STEP_STARTED", "payload": {"stepId": "a", "attempt": 1}}], None))
    ok(driver.recover("x"))
    assert log_types(driver, "x")[2:] == ["EXECUTION_RECOVERED", "STEP_STARTED", "STEP_COMPLETED",
                                          "EXECUTION_SUSPENDED"]
    state = driver.read_state("x")
    assert state["suspendedOn"] == {"on": "go1"}
    assert "_resumePayloads" not in state["variables"]
    assert state["steps"]["a"]["attempt"] == 2
    assert observed(driver, "x") == []


# --------------------------------------------------------------------------- replay


def test_recorded_step_runs_once_across_resumes(driver: ReferenceDriver) -> None:
    """ADR 0057 Context: recorded steps replay from frames; a step is started once, whatever the re-runs."""
    define(driver, "f", step("a", {"v": 1}), gate("g1"), step("b", 2), gate("g2"), gate("g3"))
    ok(driver.start("x", "f", None))
    for on in ("g1", "g2", "g3"):
        ok(driver.resume("x", on, on))
    log = driver.read_log("x")
    started = [e["payload"] for e in log if e["type"] == "STEP_STARTED"]
    completed = [e["payload"] for e in log if e["type"] == "STEP_COMPLETED"]
    assert started == [{"stepId": "a", "attempt": 1}, {"stepId": "b", "attempt": 1}]
    assert completed == [{"stepId": "a", "output": {"v": 1}}, {"stepId": "b", "output": 2}]
    assert status(driver, "x") == "completed"


def test_rerun_sees_recorded_step_output() -> None:
    """ADR 0057 Context: a re-run replays the recorded output, even when the step's code now returns another."""
    runtime = Runtime(InMemoryEventStore())
    runtime.register("f", FlowProgram.model_validate(program(step("a", "recorded"), gate("go1"))))
    runtime.start("x", "f", None)
    runtime.register("f", FlowProgram.model_validate(program(step("a", "changed"), gate("go1"))))
    state = runtime.resume("x", "go1", True).state
    assert state.status == "completed"
    assert state.steps["a"] == {"status": "completed", "attempt": 1, "output": "recorded"}
    assert [e.type for e in runtime.log("x")].count("STEP_STARTED") == 1


def test_context_step_replays_without_running_the_effect() -> None:
    """ADR 0057 Context: FlowContext.run returns the recorded output, never runs the effect, appends nothing."""
    state = State(status="running", steps={"a": {"status": "completed", "attempt": 1, "output": {"k": [1]}}})

    def must_not_append(event_type: str, payload: JSON) -> Event:
        raise AssertionError(f"appended {event_type}")

    world = World()
    ctx = FlowContext(state, [], must_not_append, world, "x")
    assert ctx.run(StepOp(op="step", id="a", output="the code changed")) == {"k": [1]}
    assert world.ledger == []


# --------------------------------------------------------------------------- emits


def test_application_emit_is_appended_once_across_reruns(driver: ReferenceDriver) -> None:
    """ADR 0104 D1 / programs.py: an emit re-runs on replay, but an identical fact is not appended again."""
    define(driver, "f", emit("app.note", {"k": 1}), gate("g1"), emit("app.note", {"k": 1}), gate("g2"),
           emit("app.note", {"k": 2}))
    ok(driver.start("x", "f", None))
    ok(driver.resume("x", "g1", None))
    ok(driver.resume("x", "g2", None))
    notes = [e["payload"] for e in driver.read_log("x") if e["type"] == "app.note"]
    assert notes == [{"k": 1}, {"k": 2}]
    assert status(driver, "x") == "completed"


@pytest.mark.parametrize("kernel_type", sorted(set(KERNEL_TYPES) - set(vocabulary().emit_guard.allowed)))
def test_emit_of_kernel_type_fails_the_execution(driver: ReferenceDriver, kernel_type: str) -> None:
    """ADR 0104 D1 (the emit guard): flow code emitting a kernel type outside the allow-list fails
    the run and appends no kernel event."""
    define(driver, "f", step("a", 1), emit(kernel_type, {"forged": True}), complete("never"))
    ok(driver.start("x", "f", None))
    log = driver.read_log("x")
    assert [e["type"] for e in log] == ["EXECUTION_STARTED", "STEP_STARTED", "STEP_COMPLETED", "EXECUTION_FAILED"]
    assert all(e["payload"] != {"forged": True} for e in log)
    error = log[-1]["payload"]["error"]
    assert error["type"] == "EmitRefusedError" == REFUSAL_ERRORS["kernel-type"]
    assert error["reason"] == "kernel-type"
    assert kernel_type in error["message"]
    state = driver.read_state("x")
    assert state["status"] == "failed"
    assert state["output"] is None


def test_emit_of_kernel_type_after_a_gate_fails_on_the_rerun(driver: ReferenceDriver) -> None:
    """ADR 0104 D1: a flow cannot answer its own next gate by emitting EXECUTION_RESUMED."""
    define(driver, "f", gate("g1"), emit("EXECUTION_RESUMED", "forged"), gate("g2"))
    ok(driver.start("x", "f", None))
    ok(driver.resume("x", "g1", "real"))
    state = driver.read_state("x")
    assert state["status"] == "failed"
    assert state["variables"]["_resumePayloads"] == ["real"]
    assert log_types(driver, "x").count("EXECUTION_RESUMED") == 1
