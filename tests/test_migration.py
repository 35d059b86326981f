"""ADR 0056 and the code versions it builds on, on the reference kernel directly:
the version format, each built-in transform and each refusal (nothing appended),
the fold, and the runs that must be handed the folded input. The suite's own
oracle for the transforms (properties/migration.py) is held to the same table."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from loomcheck.properties.migration import expected_outcome, folded_input
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.canonical import canonical_json
from loomcheck.spec.names import INPUT_EVENT
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.versions import PROGRAM_MAX_DEPTH, code_version, pinned_version

V1 = {"body": [{"op": "input"}, {"op": "suspend", "on": "go1"}, {"op": "observe"}, {"op": "suspend", "on": "go2"},
               {"op": "observe"}, {"op": "complete", "output": "done"}]}
EVOLVED = {**V1, "validateInput": True,
           "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}, "n": {"type": "integer", "default": 0}},
                           "required": ["key"]}}


@pytest.fixture
def driver() -> ReferenceDriver:
    made = ReferenceDriver(store="memory")
    yield made
    made.close()


LEGACY = {"id": "a"}


def parked_on_v1(driver: ReferenceDriver, input: Any = LEGACY) -> None:
    assert driver.define_flow("f", V1).ok
    assert driver.start("x", "f", input).ok


def inputs_handed(driver: ReferenceDriver) -> list[Any]:
    return [e["payload"]["value"] for e in driver.read_log("x") if e["type"] == INPUT_EVENT]


def migrated_record(driver: ReferenceDriver) -> dict[str, Any]:
    return [e for e in driver.read_log("x") if e["type"] == "EXECUTION_MIGRATED"][-1]["payload"]


# -- code versions (K11) ----------------------------------------------------------------
def test_the_code_version_is_the_hash_of_the_canonical_program() -> None:
    assert code_version(V1) == "c1:" + hashlib.sha256(canonical_json(V1).encode()).hexdigest()
    assert code_version({"body": [], "language": "loomcheck-flow/1"}) == code_version(
        {"language": "loomcheck-flow/1", "body": []})  # key order does not matter
    assert code_version(V1) != code_version(EVOLVED)


def test_a_program_with_a_view_1024_deep_has_a_code_version() -> None:
    view: Any = 0
    for _ in range(1024):
        view = [view]
    program = {"body": [{"op": "suspend", "on": "approve", "view": view}]}
    FlowProgram.model_validate(program)
    assert code_version(program).startswith("c1:")
    assert PROGRAM_MAX_DEPTH > 1024 + 3


def test_start_records_the_version_and_the_state_is_pinned(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    started = driver.read_log("x")[0]["payload"]
    assert started["version"] == code_version(V1)
    assert driver.read_state("x")["codeVersion"] == code_version(V1)
    assert pinned_version(driver.read_log("x")) == code_version(V1)


def test_redefining_the_same_program_keeps_the_version(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.define_flow("f", dict(reversed(list(V1.items())))).ok
    assert driver.resume("x", "go1", 1).ok


def test_changed_code_refuses_resume_and_recover_and_resume_as_is_the_exit(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.define_flow("f", {**V1, "body": V1["body"][:3]}).ok
    before = driver.read_log("x")
    refused = driver.resume("x", "go1", 1)
    assert (refused.ok, refused.error, refused.reason) == (False, "FlowCodeMismatchError", "code-mismatch")
    assert driver.read_log("x") == before
    assert driver.resume("x", "go2", 1).reason == "gate-mismatch"  # the ingress gate comes first
    assert driver.resume_as("x", "f", "go1", 1).ok
    moved = migrated_record(driver)
    assert moved["fromVersion"] == code_version(V1) and moved["toVersion"] == code_version({**V1, "body": V1["body"][:3]})
    assert "migratedInput" not in moved
    assert driver.read_state("x")["status"] == "completed"


def test_a_restart_keeps_the_deployed_versions(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    driver.restart()
    assert driver.resume("x", "go1", 1).ok


def test_the_timer_service_and_recover_abandoned_leave_changed_code_alone(driver: ReferenceDriver) -> None:
    timed = {"body": [{"op": "input"}, {"op": "suspend", "on": "go1", "timeout": 1000}, {"op": "observe"}]}
    crashing = {"body": [{"op": "step", "id": "s", "output": 1, "crash": {"at": "before-effect"}}]}
    assert driver.define_flow("t", timed).ok and driver.define_flow("c", crashing).ok
    assert driver.start("xt", "t", None).ok
    assert driver.start("xc", "c", None).crashed
    assert driver.define_flow("t", {**timed, "body": timed["body"][:2]}).ok
    assert driver.define_flow("c", {"body": []}).ok
    assert driver.advance_clock(5000) == []
    assert driver.recover_abandoned() == []
    assert driver.recover("xc").reason == "code-mismatch"


# -- transforms (ADR 0056 D1, D3) --------------------------------------------------------
WORKING = [
    ({"name": "rename", "from": "id", "to": "key"}, {"id": "a", "n": 1}, {"key": "a", "n": 1}),
    ({"name": "rename", "from": "absent", "to": "key"}, {"id": "a"}, {"id": "a"}),
    ({"name": "default", "field": "n", "value": 0}, {"id": "a"}, {"id": "a", "n": 0}),
    ({"name": "default", "field": "n", "value": 0}, {"n": 5}, {"n": 5}),
    ({"name": "default", "field": "n"}, {}, {"n": None}),
    ({"name": "wrap", "key": "legacy"}, None, {"legacy": None}),
    ({"name": "wrap", "key": "legacy"}, [1], {"legacy": [1]}),
]
REFUSED = [
    ({"name": "fail", "message": "no"}, {"id": "a"}, "transform-failed"),
    ({"name": "fail"}, {"id": "a"}, "transform-failed"),
    ({"name": "rename", "from": "id", "to": "key"}, ["not", "an", "object"], "transform-failed"),
    ({"name": "default", "field": "n", "value": 0}, None, "transform-failed"),
    ({"name": "nothing"}, {"id": "a"}, "transform-returned-nothing"),
    ({"name": "__proto__"}, {"id": "a"}, "unknown-transform"),
    ({"name": "constructor"}, {"id": "a"}, "unknown-transform"),
    ({"name": "rename", "from": 1, "to": "key"}, {"id": "a"}, "unknown-transform"),
    ({"name": "rename", "to": "key"}, {"id": "a"}, "unknown-transform"),
    ({"name": "wrap", "key": "k", "extra": 1}, {"id": "a"}, "unknown-transform"),
    ({"nom": "wrap"}, {"id": "a"}, "unknown-transform"),
]


@pytest.mark.parametrize(("transform", "given", "outcome"), WORKING, ids=[str(w[0]) + str(w[1]) for w in WORKING])
def test_a_working_transform_records_its_outcome(driver: ReferenceDriver, transform: dict, given: Any,
                                                 outcome: Any) -> None:
    parked_on_v1(driver, given)
    assert driver.resume_as("x", "f", "go1", 1, {"transformState": transform}).ok
    assert migrated_record(driver)["migratedInput"] == outcome
    assert driver.read_state("x")["variables"]["_input"] == outcome
    assert driver.read_state("x")["variables"]["_migrations"][-1]["stateMigrated"] is True
    assert inputs_handed(driver)[-1] == outcome
    assert expected_outcome(transform, given, None).value == outcome  # the suite's oracle agrees


@pytest.mark.parametrize(("transform", "given", "reason"), REFUSED, ids=[str(r[0]) + str(r[1]) for r in REFUSED])
def test_a_failing_transform_appends_nothing(driver: ReferenceDriver, transform: dict, given: Any,
                                            reason: str) -> None:
    parked_on_v1(driver, given)
    before = driver.read_log("x")
    refused = driver.resume_as("x", "f", "go1", 1, {"transformState": transform})
    assert (refused.ok, refused.error, refused.reason) == (False, "StateMigrationError", reason)
    assert driver.read_log("x") == before
    assert expected_outcome(transform, given, None).refusal == reason


def test_parse_uses_the_target_schema(driver: ReferenceDriver) -> None:
    parked_on_v1(driver, {"key": "a"})
    assert driver.define_flow("f", EVOLVED).ok
    assert driver.resume_as("x", "f", "go1", 1, {"transformState": {"name": "parse"}}).ok
    assert migrated_record(driver)["migratedInput"] == {"key": "a", "n": 0}
    assert expected_outcome({"name": "parse"}, {"key": "a"}, FlowProgram.model_validate(EVOLVED)).value == \
        {"key": "a", "n": 0}


def test_parse_without_a_target_schema_fails(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.resume_as("x", "f", "go1", 1, {"transformState": {"name": "parse"}}).reason == "transform-failed"


def test_the_second_migration_transforms_the_first_ones_outcome(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.resume_as("x", "f", "go1", 1, {"transformState": {"name": "rename", "from": "id", "to": "key"}}).ok
    assert driver.resume_as("x", "f", "go2", 2, {"transformState": {"name": "wrap", "key": "v2"}}).ok
    assert migrated_record(driver)["migratedInput"] == {"v2": {"key": "a"}}
    assert folded_input(driver.read_log("x")) == {"v2": {"key": "a"}}


def test_the_contract_evolving_deploy_refuses_without_a_transform(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.define_flow("f", EVOLVED).ok
    before = driver.read_log("x")
    refused = driver.resume_as("x", "f", "go1", 1)
    assert (refused.error, refused.reason) == ("StateMigrationError", "input-contract")
    assert driver.read_log("x") == before
    assert driver.resume_as("x", "f", "go1", 1, {"transformState": {"name": "rename", "from": "id", "to": "key"}}).ok
    assert inputs_handed(driver)[-1] == {"key": "a"}


def test_the_resume_checks_come_before_the_transform(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.resume_as("x", "f", "go2", 1, {"transformState": {"name": "fail"}}).reason == "gate-mismatch"


# -- the fold and the runs (ADR 0056 D2) -------------------------------------------------
def test_a_plain_resume_after_a_hand_crafted_migration_reads_the_fold(driver: ReferenceDriver) -> None:
    """The ADR's hand-crafted-history test: the migration fact is recorded, its resume never ran."""
    assert driver.define_flow("f", V1).ok
    version = code_version(V1)
    events = [
        {"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f", "input": {"id": "a"}, "version": version}},
        {"seq": 2, "type": "EXECUTION_SUSPENDED", "payload": {"condition": {"on": "go1"}}},
        {"seq": 3, "type": "EXECUTION_MIGRATED", "payload": {"fromFlow": "f", "toFlow": "f", "fromVersion": version,
                                                            "toVersion": version, "migratedInput": {"key": "a"}}},
    ]
    assert driver.load("x", events, None).ok
    driver.restart()
    assert driver.resume("x", "go1", 1).ok
    assert inputs_handed(driver) == [{"key": "a"}]


def test_a_migration_without_a_transform_leaves_input_and_stamps_nothing(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.resume_as("x", "f", "go1", 1).ok
    state = driver.read_state("x")
    assert state["variables"]["_input"] == {"id": "a"}
    assert "stateMigrated" not in state["variables"]["_migrations"][-1]


def test_replay_hands_later_runs_the_recorded_value(driver: ReferenceDriver) -> None:
    parked_on_v1(driver)
    assert driver.resume_as("x", "f", "go1", 1, {"transformState": {"name": "wrap", "key": "legacy"}}).ok
    driver.restart()
    assert driver.resume("x", "go2", 2).ok
    assert inputs_handed(driver) == [{"id": "a"}, {"legacy": {"id": "a"}}]  # the second run's fact was already there
    assert driver.read_state("x")["variables"]["_input"] == {"legacy": {"id": "a"}}
