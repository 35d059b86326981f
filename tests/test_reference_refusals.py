"""The reference kernel's refusals, each typed as spec/refusals.toml says and appending
nothing, and its input validation (ADR 0077 Context: the parsed value is recorded)."""

from __future__ import annotations

import math

import pytest

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.programs import LANGUAGE

from driving import (
    JSON, KERNEL_TYPES, REFUSAL_ERRORS, OBSERVE, program, gate, step, emit, complete, driver, define,
    ok, observed, status, assert_refused, refused_unchanged, two_gate_flow,
)


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
