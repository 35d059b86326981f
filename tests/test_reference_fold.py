"""The reference fold: ADR 0104 D3's status-only null resume, key safety against hostile event
types, purity, and that the state is the fold of the log for random programs on both stores."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from loomcheck.fuzz import hostile
from loomcheck.machine.strategies import ALL_FEATURES, payloads, programs
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import Event, to_plain_json
from loomcheck.reference.fold import HANDLERS, IN_DOUBT_GATE, State, fold, handler_for
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.vocabulary import kernel_event_types

from driving import (
    JSON, KERNEL_TYPES, OBSERVE, gate, step, emit, complete, driver, define, ok, observed, assert_refused,
    events, parked_log,
)


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
