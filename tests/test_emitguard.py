"""The emit guard's rules at their boundaries (ADR 0104 D1), on the pure module."""

from __future__ import annotations

import math

import pytest

from loomcheck.reference.context import FlowContext, World
from loomcheck.reference.emitguard import EffectScope, check_decide, guard
from loomcheck.reference.errors import EmitRefusedError
from loomcheck.reference.fold import State
from loomcheck.spec.vocabulary import kernel_event_types, vocabulary

RULES = vocabulary().emit_guard


def refused(event_type: str, payload, reason: str, decisions=None, scope=None) -> None:
    with pytest.raises(EmitRefusedError) as caught:
        guard(event_type, payload, decisions or {}, scope)
    assert caught.value.reason == reason, caught.value


@pytest.mark.parametrize("event_type", sorted(kernel_event_types() - set(RULES.allowed)))
def test_kernel_types_outside_the_allow_list_are_refused(event_type: str) -> None:
    refused(event_type, {"stepId": "a"}, "kernel-type")


def test_application_types_pass_untouched() -> None:
    assert guard("app.note", {"k": [1]}, {}, None) == ("app.note", {"k": [1]})


@pytest.mark.parametrize("field", sorted(RULES.meter_ceilings))
def test_meter_bounds_are_inclusive_and_exact(field: str) -> None:
    ceiling = RULES.meter_ceilings[field]
    for ok in (0, 0.0, 1, ceiling):
        assert guard("RESOURCE_METERED", {field: ok}, {}, None)[1] == {field: ok}
    for bad in (-1, -0.5, math.nextafter(ceiling, math.inf), 10**400, True, "1", None, [1]):
        refused("RESOURCE_METERED", {field: bad}, "invalid-meter")


def test_non_finite_meters_are_refused_before_anything_is_appended() -> None:
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(EmitRefusedError):  # not JSON at all: invalid-emit
            guard("RESOURCE_METERED", {"tokens": bad}, {}, None)


def test_quota_reason_is_a_string_of_at_most_the_limit() -> None:
    limit = RULES.quota_reason_max
    assert guard("QUOTA_EXCEEDED", {"reason": "q" * limit}, {}, None)
    for bad in ({"reason": "q" * (limit + 1)}, {"reason": 5}, {}, "reason"):
        refused("QUOTA_EXCEEDED", bad, "invalid-quota")


@pytest.mark.parametrize("audit", RULES.audit)
def test_audit_records_are_objects(audit: str) -> None:
    assert guard(audit, {"why": "x"}, {}, None)
    refused(audit, ["x"], "invalid-emit")


def test_decision_rules() -> None:
    reserved = RULES.reserved_decision_prefix
    refused("DECISION_RECORDED", {"decisionId": reserved + "indoubt__:a:1", "choice": 1}, "reserved-decision-id")
    refused("DECISION_RECORDED", {"decisionId": reserved + "x", "choice": 1}, "reserved-decision-id", scope=EffectScope("s", 1))
    refused("DECISION_RECORDED", {"decisionId": "d", "choice": 2}, "decision-conflict", decisions={"d": 1})
    assert guard("DECISION_RECORDED", {"decisionId": "d", "choice": 1}, {"d": 1}, None)[1]["decisionId"] == "d"
    # An effect's id lands in its step's namespace, per attempt, and never pre-empts the flow's own "d".
    _, rewritten = guard("DECISION_RECORDED", {"decisionId": "d", "choice": 2}, {"d": 1}, EffectScope("s", 3))
    assert rewritten == {"decisionId": "effect:s#3:d", "choice": 2}
    refused("DECISION_RECORDED", {"choice": 2}, "invalid-emit")


def test_what_is_checked_is_what_is_appended() -> None:
    """A payload object that shows one face to a check and another to a serialiser
    cannot smuggle a reserved id: the guard checks its own plain copy."""

    class TwoFaced(dict):
        def get(self, key, default=None):
            return "innocent" if key == "decisionId" else super().get(key, default)

        def __getitem__(self, key):
            return "innocent" if key == "decisionId" else super().__getitem__(key)

    sneaky = TwoFaced(decisionId=RULES.reserved_decision_prefix + "indoubt__:pay:1", choice={"resolution": "succeeded"})
    refused("DECISION_RECORDED", sneaky, "reserved-decision-id")
    _, plain = guard("app.note", TwoFaced(a=1), {}, None)
    assert type(plain) is dict


def test_decide_refuses_reserved_ids_before_its_replay_lookup() -> None:
    """Even when the log already holds the reserved id (forged by a direct store writer),
    ctx.decide refuses it rather than serving the recorded choice."""
    reserved_id = RULES.reserved_decision_prefix + "indoubt__:a:1"
    state = State(status="running", variables={"_decisions": {reserved_id: {"resolution": "succeeded"}}})
    ctx = FlowContext(state, [], lambda t, p: (_ for _ in ()).throw(AssertionError("appended")), World(), "x")
    with pytest.raises(EmitRefusedError) as caught:
        ctx.decide(reserved_id, "anything")
    assert caught.value.reason == "reserved-decision-id"
    check_decide("ordinary")  # no error
