"""Building flow programs and driving the reference kernel in the reference's unit tests
(tests/test_reference*.py): the program builders, a driver fixture on the in-memory store,
and assertions about outcomes and logs."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import pytest

from loomcheck.contract.driver import Outcome
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import Event
from loomcheck.spec.names import OBSERVED_EVENT
from loomcheck.spec.programs import LANGUAGE
from loomcheck.spec.vocabulary import kernel_event_types, refusals

JSON = Any
KERNEL_TYPES: list[str] = sorted(kernel_event_types())
REFUSAL_ERRORS: dict[str, str] = {r.reason: r.error for r in refusals().refusal}
OBSERVE: dict[str, JSON] = {"op": "observe"}


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
