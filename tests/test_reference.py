"""Unit tests of the reference kernel's semantics.

Most tests drive the kernel through `ReferenceDriver(store="memory")`, the way
the suite drives any implementation; the fold and the flow context are also
tested directly where the point is an internal (purity, key safety, D3).
Each test's docstring names the ADR decision it pins.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loomcheck.fuzz import hostile
from loomcheck.contract.driver import Outcome
from loomcheck.machine.strategies import ALL_FEATURES, payloads, programs
from loomcheck.reference.context import FlowContext, Park, World
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import Event, to_plain_json
from loomcheck.reference.fold import HANDLERS, IN_DOUBT_GATE, State, fold, handler_for
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.spec.programs import LANGUAGE, OBSERVED_EVENT, FlowProgram, StepOp
from loomcheck.spec.vocabulary import kernel_event_types, refusals, vocabulary

JSON = Any
KERNEL_TYPES: list[str] = sorted(kernel_event_types())
REFUSAL_ERRORS: dict[str, str] = {r.reason: r.error for r in refusals().refusal}
OBSERVE: dict[str, JSON] = {"op": "observe"}


# --------------------------------------------------------------------------- helpers


def program(*ops: dict[str, JSON], **extra: JSON) -> dict[str, JSON]:
    return {"language": LANGUAGE, "body": list(ops), **extra}


def gate(on: str) -> dict[str, JSON]:
    return {"op": "suspend", "on": on}


def step(step_id: str, output: JSON = None) -> dict[str, JSON]:
    return {"op": "step", "id": step_id, "output": output}


def emit(event_type: str, payload: JSON = None) -> dict[str, JSON]:
    return {"op": "emit", "type": event_type, "payload": payload}


def complete(output: JSON = None) -> dict[str, JSON]:
    return {"op": "complete", "output": output}


@pytest.fixture
def driver() -> Iterator[ReferenceDriver]:
    d = ReferenceDriver(store="memory")
    yield d
    d.close()


def define(driver: ReferenceDriver, flow_id: str, *ops: dict[str, JSON], **extra: JSON) -> None:
    outcome = driver.define_flow(flow_id, program(*ops, **extra))
    assert outcome.ok, outcome


def ok(outcome: Outcome) -> None:
    assert outcome.ok, outcome


def log_types(driver: ReferenceDriver, execution_id: str) -> list[str]:
    return [e["type"] for e in driver.read_log(execution_id)]


def observed(driver: ReferenceDriver, execution_id: str) -> list[JSON]:
    return [e["payload"] for e in driver.read_log(execution_id) if e["type"] == OBSERVED_EVENT]


def status(driver: ReferenceDriver, execution_id: str) -> str:
    return driver.read_state(execution_id)["status"]


def log_bytes(driver: ReferenceDriver, execution_id: str) -> str:
    return json.dumps(driver.read_log(execution_id), ensure_ascii=True)


def assert_refused(outcome: Outcome, reason: str) -> None:
    """Refused, typed exactly as spec/refusals.toml says."""
    assert not outcome.ok, f"expected refusal {reason}, was accepted"
    assert outcome.reason == reason, outcome
    assert outcome.error == REFUSAL_ERRORS[reason], outcome


def refused_unchanged(driver: ReferenceDriver, execution_id: str, operation: Callable[[], Outcome],
                      reason: str) -> Outcome:
    """Run a refused operation; the log must be byte-identical afterwards (refuse before append)."""
    before = log_bytes(driver, execution_id)
    state_before = driver.read_state(execution_id)
    outcome = operation()
    assert_refused(outcome, reason)
    assert log_bytes(driver, execution_id) == before
    assert driver.read_state(execution_id) == state_before
    return outcome


def events(*entries: tuple[str, JSON]) -> list[Event]:
    return [Event("x", seq, event_type, payload) for seq, (event_type, payload) in enumerate(entries, start=1)]


def parked_log(on: str = "go1") -> list[tuple[str, JSON]]:
    return [("EXECUTION_STARTED", {"flowId": "f", "input": None}),
            ("EXECUTION_SUSPENDED", {"condition": {"on": on}})]


def two_gate_flow(driver: ReferenceDriver) -> None:
    define(driver, "two", step("plan", {"plan": "p"}), gate("go1"), OBSERVE, gate("go2"), OBSERVE, complete("done"))


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


# --------------------------------------------------------------------------- refusals


def test_refusal_table_is_the_spec() -> None:
    """ADR 0104 D4: the reasons these tests check are exactly the catalogue's refusal reasons."""
    assert set(REFUSAL_ERRORS) == {
        "unknown-execution", "kernel-namespace", "not-suspended", "gate-mismatch", "terminal", "invalid-input",
        "unknown-flow", "duplicate-execution", "invalid-payload", "invalid-program", "kernel-type",
        "invalid-meter", "invalid-quota", "reserved-decision-id", "decision-conflict", "invalid-emit", "not-a-verdict",
        # ADR 0117
        "view-digest-mismatch", "unauthenticated", "park-not-located", "timer-wake-not-system",
        "strict-needs-authenticator", "weak-secret",
        # ADR 0056 (tests/test_migration.py)
        "code-mismatch", "transform-failed", "transform-returned-nothing", "unknown-transform", "input-contract",
        # ADR 0104 D2 (tests/test_legacy.py)
        "ambiguous-legacy-answers", "invalid-discard", "discard-on-kernel-resume", "discard-unverified",
        "discard-without-ambiguity",
        # the reference's ingress (tests/test_ingress.py)
        "input-too-large", "payload-too-large", "invalid-config"}


@pytest.mark.parametrize("kernel_type", KERNEL_TYPES)
def test_resume_with_kernel_type_is_refused_even_when_it_names_the_gate(driver: ReferenceDriver,
                                                                        kernel_type: str) -> None:
    """ADR 0104 D1 (#304): a caller can never resume with a kernel event type, even one the gate is named after."""
    define(driver, "f", gate(kernel_type))
    ok(driver.start("x", "f", None))
    assert driver.read_state("x")["suspendedOn"] == {"on": kernel_type}
    refused_unchanged(driver, "x", lambda: driver.resume("x", kernel_type, {"n": 1}), "kernel-namespace")


@pytest.mark.parametrize("kernel_type", KERNEL_TYPES)
def test_resume_with_kernel_type_of_finished_execution(driver: ReferenceDriver, kernel_type: str) -> None:
    """ADR 0104 D1: the kernel namespace is refused whatever state the execution is in (checked first)."""
    define(driver, "f", complete(1))
    ok(driver.start("x", "f", None))
    refused_unchanged(driver, "x", lambda: driver.resume("x", kernel_type, None), "kernel-namespace")


def test_resume_of_completed_execution_is_not_suspended(driver: ReferenceDriver) -> None:
    """ADR 0104 D4: a resume of an execution that is not parked is refused (not-suspended)."""
    define(driver, "f", gate("go1"))
    ok(driver.start("x", "f", None))
    ok(driver.resume("x", "go1", 1))
    refused_unchanged(driver, "x", lambda: driver.resume("x", "go1", 2), "not-suspended")


def test_resume_before_the_park_is_not_suspended(driver: ReferenceDriver) -> None:
    """ADR 0104 D4: a resume arriving BEFORE the execution parks (it is running) appends nothing."""
    define(driver, "f", step("a", 1), gate("go1"))
    ok(driver.load("x", [{"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f", "input": None}},
                         {"seq": 2, "type": "STEP_STARTED", "payload": {"stepId": "a", "attempt": 1}}], None))
    assert status(driver, "x") == "running"
    refused_unchanged(driver, "x", lambda: driver.resume("x", "go1", {"early": True}), "not-suspended")
    # once recovered it parks at go1 with no answer recorded
    ok(driver.recover("x"))
    assert driver.read_state("x")["suspendedOn"] == {"on": "go1"}
    assert "_resumePayloads" not in driver.read_state("x")["variables"]


def test_recover_of_parked_execution_is_not_suspended(driver: ReferenceDriver) -> None:
    """ADR 0104 D4: recovery of a parked execution is refused (not-suspended)."""
    define(driver, "f", gate("go1"))
    ok(driver.start("x", "f", None))
    refused_unchanged(driver, "x", lambda: driver.recover("x"), "not-suspended")


def test_resume_naming_another_gate_is_gate_mismatch(driver: ReferenceDriver) -> None:
    """ADR 0104 D1 (the ingress gate, #304/#305): the resume must name the parked gate."""
    two_gate_flow(driver)
    ok(driver.start("x", "two", None))
    refused_unchanged(driver, "x", lambda: driver.resume("x", "go2", 1), "gate-mismatch")
    for name in ("EXECUTION_RECOVERED", "TIMER_FIRED", "__proto__", "go1 ", "GO1"):
        refused_unchanged(driver, "x", lambda name=name: driver.resume("x", name, 1), "gate-mismatch")
    ok(driver.resume("x", "go1", 1))


@pytest.mark.parametrize("ending", ["completed", "failed"])
def test_recover_of_terminal_execution_is_refused(driver: ReferenceDriver, ending: str) -> None:
    """ADR 0104 D4: recovery of a completed or failed execution is refused (terminal)."""
    body = [complete(1)] if ending == "completed" else [emit("EXECUTION_COMPLETED", 1)]
    define(driver, "f", *body)
    ok(driver.start("x", "f", None))
    assert status(driver, "x") == ending
    refused_unchanged(driver, "x", lambda: driver.recover("x"), "terminal")


def test_unknown_execution_is_refused(driver: ReferenceDriver) -> None:
    """ADR 0104 D4: resume and recover of an id with no log are refused (unknown-execution), creating nothing."""
    refused_unchanged(driver, "nope", lambda: driver.resume("nope", "go1", 1), "unknown-execution")
    refused_unchanged(driver, "nope", lambda: driver.recover("nope"), "unknown-execution")
    assert driver.read_log("nope") == []


def test_start_of_unknown_flow_is_refused(driver: ReferenceDriver) -> None:
    """ADR 0077 D1: start() naming an unregistered flow is refused (unknown-flow) and appends nothing."""
    refused_unchanged(driver, "x", lambda: driver.start("x", "missing", None), "unknown-flow")
    assert driver.read_log("x") == []


def test_start_of_existing_execution_is_duplicate(driver: ReferenceDriver) -> None:
    """ADR 0104 D4: start() with an id that already has a log is refused (duplicate-execution)."""
    define(driver, "f", gate("go1"))
    ok(driver.start("x", "f", {"first": True}))
    refused_unchanged(driver, "x", lambda: driver.start("x", "f", {"second": True}), "duplicate-execution")
    refused_unchanged(driver, "x", lambda: driver.load("x", [], None), "duplicate-execution")


INVALID_PROGRAMS: dict[str, JSON] = {
    "body-not-a-list": {"language": LANGUAGE, "body": {"op": "suspend", "on": "go1"}},
    "duplicate-step-ids": program(step("a"), gate("go1"), step("a")),
    "validate-without-schema": program(gate("go1"), validateInput=True),
    "lone-surrogate-gate": program(gate("\ud800")),
    "unknown-op": program({"op": "sleep", "for": 5}),
    "wrong-language": {"language": "loomcheck-flow/2", "body": []},
    "extra-field": program(gate("go1"), extra=1),
    "empty-step-id": program(step("")),
    "nan-output": program(step("a", math.nan)),
}


@pytest.mark.parametrize("name", sorted(INVALID_PROGRAMS))
def test_invalid_program_is_refused(driver: ReferenceDriver, name: str) -> None:
    """ADR 0077 D1: define_flow() refuses what is not a valid flow program, and registers nothing."""
    define(driver, "other", gate("go1"))
    ok(driver.start("x", "other", None))
    refused_unchanged(driver, "x", lambda: driver.define_flow("f", INVALID_PROGRAMS[name]), "invalid-program")
    assert_refused(driver.start("y", "f", None), "unknown-flow")
    assert driver.read_log("y") == []


INVALID_PAYLOADS: dict[str, JSON] = {
    "nan": {"score": math.nan},
    "infinity": [math.inf],
    "set": {1, 2},
    "int-keyed-dict": {1: "one"},
    "lone-surrogate": "\ud800",
    "lone-surrogate-key": {"a\udfffb": 1},
    "object": object(),
}


@pytest.mark.parametrize("name", sorted(INVALID_PAYLOADS))
def test_non_json_payload_is_refused_and_gate_stays_resumable(driver: ReferenceDriver, name: str) -> None:
    """ADR 0077 Consequences: a payload that is not JSON is refused (invalid-payload); the execution stays parked."""
    define(driver, "f", gate("go1"), OBSERVE)
    ok(driver.start("x", "f", None))
    refused_unchanged(driver, "x", lambda: driver.resume("x", "go1", INVALID_PAYLOADS[name]), "invalid-payload")
    ok(driver.resume("x", "go1", {"fine": 1}))
    assert observed(driver, "x") == [{"gate": 0, "on": "go1", "value": {"fine": 1}}]


SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "n": {"type": "integer", "default": 0},
        "opts": {"type": "object", "properties": {"retries": {"type": "integer", "default": 3},
                                                  "mode": {"type": "string", "default": "safe"}}},
    },
    "required": ["id"],
}


def test_non_matching_input_is_refused_naming_the_field(driver: ReferenceDriver) -> None:
    """ADR 0077 Context: with validateInput, a non-matching input is refused (invalid-input) before any append."""
    define(driver, "f", gate("go1"), inputSchema=SCHEMA, validateInput=True)
    outcome = refused_unchanged(driver, "x", lambda: driver.start("x", "f", {"id": 7}), "invalid-input")
    assert "id" in outcome.message
    outcome = refused_unchanged(driver, "x", lambda: driver.start("x", "f", {"id": "a", "opts": {"retries": "3"}}),
                               "invalid-input")
    assert "opts/retries" in outcome.message
    outcome = refused_unchanged(driver, "x", lambda: driver.start("x", "f", {}), "invalid-input")
    assert "'id' is a required property" in outcome.message
    assert driver.read_log("x") == []
    ok(driver.start("x", "f", {"id": "a"}))  # nothing was created by the refusals


def test_non_json_input_is_refused(driver: ReferenceDriver) -> None:
    """ADR 0077 Context: an input with no exact JSON form is refused (invalid-input), appending nothing."""
    define(driver, "f", gate("go1"))
    refused_unchanged(driver, "x", lambda: driver.start("x", "f", {"v": math.nan}), "invalid-input")


# --------------------------------------------------------------------------- input validation


def test_matching_input_is_recorded_as_parsed(driver: ReferenceDriver) -> None:
    """ADR 0077 Context: the PARSED value (defaults applied, nested too) is what is recorded."""
    define(driver, "f", gate("go1"), inputSchema=SCHEMA, validateInput=True)
    ok(driver.start("x", "f", {"id": "a", "opts": {"retries": 5}}))
    started = driver.read_log("x")[0]
    assert started["type"] == "EXECUTION_STARTED"
    assert started["payload"]["input"] == {"id": "a", "opts": {"retries": 5, "mode": "safe"}, "n": 0}
    assert driver.read_state("x")["variables"]["_input"] == started["payload"]["input"]


def test_defaults_fill_objects_inside_arrays(driver: ReferenceDriver) -> None:
    """ADR 0077 Context (spec/parsing.py): defaults fill every object the schema describes with
    `properties`, including objects that are array items (Zod applies them there too)."""
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer",
                                                                                     "default": 1}}}}}}
    define(driver, "f", gate("go1"), inputSchema=schema, validateInput=True)
    ok(driver.start("x", "f", {"items": [{}, {"qty": 4}]}))
    assert driver.read_log("x")[0]["payload"]["input"] == {"items": [{"qty": 1}, {"qty": 4}]}


def test_input_without_validation_is_recorded_as_given(driver: ReferenceDriver) -> None:
    """ADR 0077 Context: without validateInput the input is recorded exactly as given, no defaults."""
    define(driver, "f", gate("go1"), inputSchema=SCHEMA)
    given_input = {"id": 7, "opts": {}}
    ok(driver.start("x", "f", given_input))
    assert driver.read_log("x")[0]["payload"]["input"] == {"id": 7, "opts": {}}
    define(driver, "g", gate("go1"))
    ok(driver.start("y", "g", [1, "two", None]))
    assert driver.read_log("y")[0]["payload"]["input"] == [1, "two", None]


# --------------------------------------------------------------------------- ADR 0104 D3 in the fold


def test_null_resume_while_running_is_status_only() -> None:
    """ADR 0104 D3: a null EXECUTION_RESUMED answering no suspend point changes the status only."""
    base = events(("EXECUTION_STARTED", {"flowId": "f", "input": None}),
                  ("EXECUTION_SUSPENDED", {"condition": {"on": "g1"}}),
                  ("EXECUTION_RESUMED", "a"))
    before = fold(base)
    after = fold(base + [Event("x", 4, "EXECUTION_RESUMED", None)])
    assert before.status == after.status == "running"
    assert after.variables == before.variables
    assert after.variables["_resumePayloads"] == ["a"]
    assert after.variables["_resumePayload"] == "a"
    assert after.suspended_on is None
    # and from a state that never had answers, no key is created
    fresh = fold(events(("EXECUTION_STARTED", {"flowId": "f", "input": None}), ("EXECUTION_RESUMED", None)))
    assert "_resumePayloads" not in fresh.variables
    assert "_resumePayload" not in fresh.variables


def test_null_resume_on_a_terminal_execution_reopens_without_an_entry() -> None:
    """ADR 0104 D1/D3: resumeAs onto a terminal execution records EXECUTION_RESUMED(null): re-opened, no entry."""
    state = fold(events(("EXECUTION_STARTED", {"flowId": "f", "input": None}),
                        ("EXECUTION_FAILED", {"error": "boom"}),
                        ("EXECUTION_RESUMED", None)))
    assert state.status == "running"
    assert "_resumePayloads" not in state.variables


def test_null_resume_while_parked_at_a_gate_is_an_entry() -> None:
    """ADR 0104 D3: a null that answers a gate is an ordinary answer (the fold keys on the state, not null)."""
    state = fold(events(*parked_log("g1"), ("g1", None), ("EXECUTION_RESUMED", None)))
    assert state.status == "running"
    assert state.variables["_resumePayloads"] == [None]
    assert "_resumePayload" in state.variables and state.variables["_resumePayload"] is None


def test_null_resume_while_parked_in_doubt_is_status_only() -> None:
    """ADR 0104 D1/D3: the in-doubt verdict's EXECUTION_RESUMED(null) answers no gate: status only."""
    state = fold(events(*parked_log(IN_DOUBT_GATE),
                        ("DECISION_RECORDED", {"decisionId": "__loom_indoubt__:a:1", "choice": "retry-fresh",
                                               "source": "operator"}),
                        ("EXECUTION_RESUMED", None)))
    assert state.status == "running"
    assert state.suspended_on is None
    assert "_resumePayloads" not in state.variables
    assert state.variables["_decisions"] == {"__loom_indoubt__:a:1": "retry-fresh"}


def test_non_null_resume_while_not_parked_is_still_an_entry() -> None:
    """ADR 0104 D2: logs written before 0104 are replayed as written; a non-null stray stays an entry."""
    state = fold(events(("EXECUTION_STARTED", {"flowId": "f", "input": None}),
                        ("EXECUTION_RECOVERED", {}),
                        ("EXECUTION_RESUMED", {})))
    assert state.variables["_resumePayloads"] == [{}]
    assert state.variables["_resumePayload"] == {}
    in_doubt = fold(events(*parked_log(IN_DOUBT_GATE), ("EXECUTION_RESUMED", {"stepId": "a", "resolution": "x"})))
    assert in_doubt.variables["_resumePayloads"] == [{"stepId": "a", "resolution": "x"}]


# --------------------------------------------------------------------------- key safety


def test_handler_table_is_the_kernel_namespace() -> None:
    """ADR 0104 D1: the fold's handler table's keys are exactly knownEventTypes() (spec/events.toml)."""
    assert set(HANDLERS) == set(kernel_event_types())
    assert "EXECUTION_RECOVERED" not in HANDLERS and "TIMER_FIRED" not in HANDLERS


HOSTILE_NAMES: list[str] = [name for name in hostile.ALL if name not in kernel_event_types()]


def test_handler_for_hostile_names_is_none() -> None:
    """ADR 0077 (a prototype-chain bug): a caller's type string only ever finds an own entry."""
    assert len(HOSTILE_NAMES) == len(hostile.ALL)  # the corpus holds look-alikes, never a kernel type itself
    for name in HOSTILE_NAMES:
        assert handler_for(name) is None, repr(name)
    for not_a_string in (None, 5, b"x", 1.5, ("EXECUTION_RESUMED",), ["EXECUTION_RESUMED"]):
        assert handler_for(not_a_string) is None  # type: ignore[arg-type]
    for kernel_type in KERNEL_TYPES:
        assert handler_for(kernel_type) is HANDLERS[kernel_type]


def test_fold_of_hostile_types_is_a_no_op() -> None:
    """ADR 0077 (a prototype-chain bug): unknown types fold as no-ops; only `sequence` moves."""
    base = events(*parked_log("g1"), ("g1", {"n": 1}), ("EXECUTION_RESUMED", {"n": 1}),
                  ("STEP_STARTED", {"stepId": "a", "attempt": 1}))
    expected = fold(base).to_json()
    hostile_events = [Event("x", len(base) + i, name, {"stepId": "a", "condition": {"on": "z"}, "output": 1})
                      for i, name in enumerate(HOSTILE_NAMES, start=1)]
    state = fold(base + hostile_events).to_json()
    assert state.pop("sequence") == len(base) + len(HOSTILE_NAMES)
    expected.pop("sequence")
    assert state == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(("condition", "on", "stepId", "attempt", "input", "output", "error", "flowId", "decisionId",
                         "choice", "fromVersion", "toVersion", "migratedInput", "tokens", "costUsd", "ms"))
        | st.text(max_size=6), inner, max_size=5),
    max_leaves=12,
)
any_type = st.sampled_from(KERNEL_TYPES) | st.sampled_from(("EXECUTION_RECOVERED", "TIMER_FIRED", "app.x"))


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(any_type, json_values), min_size=1, max_size=8))
@example([("EXECUTION_SUSPENDED", None)])
@example([("EXECUTION_SUSPENDED", [1, 2])])
@example([("EXECUTION_SUSPENDED", {"condition": 5})])
@example([("EXECUTION_SUSPENDED", {"condition": {"on": 5}}), ("EXECUTION_RESUMED", None)])
@example([("STEP_STARTED", {"stepId": 3}), ("STEP_COMPLETED", "a string")])
@example([("STEP_STARTED", {"stepId": "a", "attempt": "two"}), ("STEP_STARTED", {"stepId": "a"})])
@example([("EXECUTION_MIGRATED", {"migratedInput": [1]}), ("EXECUTION_MIGRATED", 7)])
@example([("DECISION_RECORDED", {"decisionId": ["a"], "choice": 1})])
@example([("RESOURCE_METERED", {"tokens": "many", "ms": True, "costUsd": -1.5})])
@example([("RESOURCE_METERED", {"tokens": 10**400})])  # a JSON number too large for a float
@example([("QUOTA_EXCEEDED", None), ("RESOURCE_METERED", {"ms": 1})])
def test_fold_never_raises_on_malformed_payloads(entries: list[tuple[str, JSON]]) -> None:
    """ADR 0077 / fold.py: the fold reads payloads defensively; any JSON a log may carry folds without raising."""
    state = fold(events(*entries))
    assert state.sequence == len(entries)
    assert State.from_json(state.to_json()) == state


@pytest.mark.parametrize("meters", [
    [{"tokens": 1e308}, {"tokens": 1e308}],
    [{"costUsd": 1.7976931348623157e308}, {"costUsd": 1.7976931348623157e308}],
])
def test_folded_state_stays_json(meters: list[JSON]) -> None:
    """Driver interface (states are plain JSON values) / ADR 0104 D1 (meters are finite): folding finite
    numbers must never produce a state a store or a peer cannot represent (inf/NaN)."""
    state = fold(events(*[("RESOURCE_METERED", m) for m in meters]))
    to_plain_json(state.to_json())  # raises NotJson on inf


# --------------------------------------------------------------------------- purity


def full_payload(kernel_type: str) -> dict[str, JSON]:
    """A payload whose every field the fold reads holds nested containers."""
    nested = {"deep": [{"k": [1, 2]}]}
    return {"flowId": "f", "input": copy.deepcopy(nested), "condition": {"on": "g", "view": copy.deepcopy(nested)},
            "output": copy.deepcopy(nested), "error": copy.deepcopy(nested), "fromVersion": copy.deepcopy(nested),
            "toVersion": [copy.deepcopy(nested)], "migratedInput": copy.deepcopy(nested), "stepId": "s",
            "attempt": copy.deepcopy(nested), "decisionId": "d", "choice": copy.deepcopy(nested),
            "tokens": 1, "extra": copy.deepcopy(nested)}


def purity_log(kernel_type: str) -> list[Event]:
    return events(("EXECUTION_STARTED", {"flowId": "f", "input": {"i": [1]}}),
                  ("EXECUTION_SUSPENDED", {"condition": {"on": "s"}}),
                  ("STEP_STARTED", {"stepId": "s", "attempt": 1}),
                  (kernel_type, full_payload(kernel_type)))


def scribble(value: JSON) -> None:
    """Mutate every container reachable from value, in place."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
            item["__scribbled__"] = True
        elif isinstance(item, list):
            stack.extend(item)
            item.append("__scribbled__")


def test_fold_is_deterministic() -> None:
    """ADR 0056 D2 / fold.py: the fold is a pure function: the same events give equal states."""
    log = [e for t in KERNEL_TYPES for e in purity_log(t)]
    log = [Event("x", i, e.type, e.payload) for i, e in enumerate(log, start=1)]
    assert fold(log) == fold(log)
    assert fold(log).to_json() == fold(list(log)).to_json()


@pytest.mark.parametrize("kernel_type", KERNEL_TYPES)
def test_mutating_a_folded_state_does_not_change_a_later_fold(kernel_type: str) -> None:
    """fold.py (a pure function): the returned state shares nothing with the events it was folded from."""
    log = purity_log(kernel_type)
    expected = fold(log).to_json()
    state = fold(log)
    scribble(state.variables)
    scribble(state.steps)
    scribble(state.suspended_on)
    scribble(state.output)
    scribble(state.error)
    assert fold(log).to_json() == expected


@pytest.mark.parametrize("kernel_type", KERNEL_TYPES)
def test_mutating_the_events_does_not_change_a_folded_state(kernel_type: str) -> None:
    """fold.py (a pure function): mutating the events' payloads afterwards leaves an earlier fold unchanged."""
    log = purity_log(kernel_type)
    state = fold(log)
    expected = state.to_json()
    for event in log:
        scribble(event.payload)
    assert state.to_json() == expected


def test_fold_does_not_mutate_its_snapshot() -> None:
    """fold.py: fold(events, snapshot) starts from a copy of the snapshot."""
    snapshot = State(status="suspended", suspended_on={"on": "g"}, variables={"_resumePayloads": ["a"]})
    kept = snapshot.to_json()
    state = fold(events(("EXECUTION_RESUMED", "b")), snapshot)
    assert state.variables["_resumePayloads"] == ["a", "b"]
    assert snapshot.to_json() == kept


def test_state_json_round_trip() -> None:
    """Driver interface: State.to_json() round-trips through State.from_json()."""
    log = events(*parked_log("g1"), ("g1", {"n": [1]}), ("EXECUTION_RESUMED", {"n": [1]}),
                 ("STEP_STARTED", {"stepId": "a", "attempt": 1}), ("STEP_COMPLETED", {"stepId": "a", "output": {}}),
                 ("DECISION_RECORDED", {"decisionId": "d", "choice": [1]}), ("RESOURCE_METERED", {"ms": 2.5}),
                 ("EXECUTION_COMPLETED", {"output": {"done": True}}))
    state = fold(log)
    assert State.from_json(state.to_json()) == state
    assert State.from_json(state.to_json()).to_json() == state.to_json()
    assert State.from_json(State().to_json()) == State()
    assert State.from_json({}) == State()


# --------------------------------------------------------------------------- properties over programs


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), flow=programs(features=ALL_FEATURES - {"resume-schemas"}))
def test_state_is_fold_of_log_for_random_programs(data: st.DataObject, flow: dict[str, JSON]) -> None:
    """ADR 0056 D2 / ADR 0057: the reported state equals the fold of the log from nothing, and gate i
    received answer i, for any linear program and any number of correct answers."""
    driver = ReferenceDriver(store="memory")
    try:
        ok(driver.define_flow("f", flow))
        start_input = {"id": "a"} if flow.get("validateInput") else data.draw(payloads, label="input")
        ok(driver.start("x", "f", start_input))
        gates = FlowProgram.model_validate(flow).gates()
        answers: list[JSON] = []
        for _ in range(data.draw(st.integers(0, len(gates)), label="answers")):
            state = driver.read_state("x")
            if state["status"] != "suspended":
                break
            answer = data.draw(payloads, label="answer")
            parked = state["suspendedOn"]
            if "viewDigest" in parked:  # ADR 0117 D1: an approver echoes what it was shown
                answer = {"value": answer, "viewDigest": parked["viewDigest"]}
            ok(driver.resume("x", parked["on"], answer))
            # ADR 0117 D5: a sleep's wake is recorded as exactly {wakeAt}, whatever was sent.
            answers.append({"wakeAt": parked["wakeAt"]} if parked["on"] == "TIMER_FIRED" else to_plain_json(answer))
        assert driver.read_state("x") == driver.fold(driver.read_log("x"), None)
        for seen in observed(driver, "x"):
            assert seen["value"] == answers[seen["gate"]]
            assert seen["on"] == gates[seen["gate"]]
    finally:
        driver.close()


def run_multi_gate_scenario(driver: ReferenceDriver) -> None:
    define(driver, "f", step("plan", {"p": [1, None]}), gate("go1"), OBSERVE, emit("app.note", {"é": "🔥"}),
           gate("go1"), OBSERVE, step("apply", 2.5), gate("go3"), OBSERVE, complete({"done": True}))
    ok(driver.start("x", "f", {"ticket": 7}))
    assert_refused(driver.resume("x", "go2", 0), "gate-mismatch")
    ok(driver.resume("x", "go1", {"by": "ann"}))
    ok(driver.resume("x", "go1", None))
    assert_refused(driver.resume("x", "go3", math.nan), "invalid-payload")
    ok(driver.resume("x", "go3", [1, {"a": "b"}]))
    assert_refused(driver.resume("x", "go3", 1), "not-suspended")
    assert_refused(driver.recover("x"), "terminal")


def test_memory_and_sqlite_stores_give_identical_logs() -> None:
    """ADR 0104 D1 ("Why null"): every store round-trips the same log, null included."""
    memory, sqlite = ReferenceDriver(store="memory"), ReferenceDriver(store="sqlite")
    try:
        run_multi_gate_scenario(memory)
        run_multi_gate_scenario(sqlite)
        assert memory.read_log("x") == sqlite.read_log("x")
        assert json.dumps(memory.read_log("x")) == json.dumps(sqlite.read_log("x"))
        assert memory.read_state("x") == sqlite.read_state("x")
        assert memory.read_state("x")["status"] == "completed"
        assert memory.read_state("x")["variables"]["_resumePayloads"] == [{"by": "ann"}, None, [1, {"a": "b"}]]
    finally:
        memory.close()
        sqlite.close()
