"""The stray oracle the fleet corpus is judged by (properties/stray_oracle.py):
spec/legacy-logs.md sections 2-3, row by row, on small hand-made logs."""

from __future__ import annotations

from typing import Any

from loomcheck.properties.stray_oracle import Ambiguity, Classified, kinds_of, scan_log
from loomcheck.spec.names import IN_DOUBT_GATE
from loomcheck.spec.programs import FlowProgram

KINDS = {"a": "idempotent", "n": "non-idempotent", "h": "human", "k": "human"}.get

STARTED = ("EXECUTION_STARTED", {"flowId": "f", "input": None})
PAIR = [("EXECUTION_RECOVERED", {}), ("EXECUTION_RESUMED", {})]    # the pre-0104 recovery
COMPLETED = ("EXECUTION_COMPLETED", {"output": None})


def log(*events: tuple[str, Any], first: int = 1) -> list[dict[str, Any]]:
    return [{"seq": first + i, "type": t, "payload": p} for i, (t, p) in enumerate(events)]


def park(on: str = "go1", **extra: Any) -> tuple[str, Any]:
    return ("EXECUTION_SUSPENDED", {"condition": {"on": on, **extra}})


def resumed(payload: Any) -> tuple[str, Any]:
    return ("EXECUTION_RESUMED", payload)


def start(step: str) -> tuple[str, Any]:
    return ("STEP_STARTED", {"stepId": step, "attempt": 1})


def discard(step: str, count: int = 1) -> tuple[str, Any]:
    return ("DECISION_RECORDED", {"decisionId": f"__loom_discard__:{step}", "choice": count, "source": "operator"})


def verdicts(events: list[dict[str, Any]], snapshot: dict | None = None, live: bool = False) -> list[tuple]:
    return [(c.index, c.seq, c.why, c.verdict) for c in scan_log(events, snapshot, KINDS, live).classified]


# ------------------------------------------------------------------ the oracle: the walk (section 2)
def test_started_then_parked_at_a_gate_is_clean() -> None:
    found = scan_log(log(STARTED, park(), resumed({"ok": 1}), COMPLETED), None, KINDS)
    assert (found.classified, found.ambiguities, found.status, found.answers) == ((), (), "completed", ({"ok": 1},))


def test_the_recovery_pair_is_a_stray_at_risk_while_nothing_proves_it_spent() -> None:
    assert verdicts(log(STARTED, start("a"), *PAIR)) == [(0, 4, "recovery", "at-risk")]
    assert scan_log(log(STARTED, start("a"), *PAIR), None, KINDS).warned == {"at-risk"}


def test_a_gate_park_after_a_stray_makes_it_passed() -> None:
    assert verdicts(log(STARTED, start("a"), *PAIR, park("go2"))) == [(0, 4, "recovery", "passed")]


def test_a_terminal_execution_makes_it_harmless_unless_the_operation_is_live() -> None:
    events = log(STARTED, start("a"), *PAIR, COMPLETED)
    assert verdicts(events) == [(0, 4, "recovery", "harmless")]
    assert scan_log(events, None, KINDS).warned == frozenset()
    assert verdicts(events, live=True) == [(0, 4, "recovery", "at-risk")]   # D2: a re-open is judged live


def test_an_in_doubt_verdict_entry_is_a_stray_and_its_null_is_status_only() -> None:
    indoubt = park(IN_DOUBT_GATE, stepId="n", attempt=1)
    old = log(STARTED, start("n"), *PAIR[:1], indoubt, resumed({"stepId": "n", "resolution": "succeeded"}))
    assert verdicts(old) == [(0, 5, "in-doubt-verdict", "at-risk")]
    new = log(STARTED, start("n"), *PAIR[:1], indoubt, resumed(None))
    assert (verdicts(new), scan_log(new, None, KINDS).answers) == ([], ())   # ADR 0104 D3


def test_null_answers_no_suspend_point_when_unparked_but_is_an_answer_at_a_gate() -> None:
    assert scan_log(log(STARTED, resumed(None)), None, KINDS).answers == ()
    assert scan_log(log(STARTED, park(), resumed(None)), None, KINDS).answers == (None,)


def test_a_resume_onto_an_ended_execution_is_terminal_and_onto_a_crashed_one_unparked() -> None:
    reopened = log(STARTED, COMPLETED, ("EXECUTION_MIGRATED", {"toFlow": "f"}), ("reopen", 1), resumed(1))
    assert verdicts(reopened, live=True) == [(0, 5, "terminal", "at-risk")]
    migrated = log(STARTED, start("a"), ("EXECUTION_MIGRATED", {"toFlow": "f"}), ("migrate", 2), resumed(2))
    assert verdicts(migrated) == [(0, 5, "unparked", "at-risk")]


def test_human_parks_attributed_and_unattributed_take_answers() -> None:
    attributed = log(STARTED, start("h"), park("ok", stepId="h"), resumed("A"))
    unattributed = log(STARTED, start("h"), park("ok"), resumed("A"))
    for events in (attributed, unattributed):
        assert (verdicts(events), scan_log(events, None, KINDS).ambiguities) == ([], ())


def test_reparked_after_answer_is_ambiguous_and_its_reanswer_a_stray() -> None:
    events = log(STARTED, start("h"), park("ok"), resumed("A"), start("h"), park("ok"), resumed("B"))
    found = scan_log(events, None, KINDS)
    assert found.ambiguities == (Ambiguity("h", "reparked-after-answer", 6),) and found.refused
    assert verdicts(events) == [(1, 7, "human-reanswer", "at-risk")]


def test_an_attributed_repark_is_not_the_pre_0104_shape() -> None:
    events = log(STARTED, start("h"), park("ok", stepId="h"), resumed("A"), park("ok", stepId="h"))
    assert scan_log(events, None, KINDS).ambiguities == ()


def test_an_unspent_stray_before_a_first_start_is_ambiguous() -> None:
    events = log(STARTED, start("a"), *PAIR, start("a"), start("h"), park("ok"))
    assert scan_log(events, None, KINDS).ambiguities == (Ambiguity("h", "stray-before-first-start", 6),)


def test_a_gate_park_between_the_stray_and_the_first_start_spends_it() -> None:
    events = log(STARTED, start("a"), *PAIR, park("go2"), resumed("P"), start("h"), park("ok"))
    assert scan_log(events, None, KINDS).ambiguities == ()


def test_a_human_park_proves_nothing() -> None:
    """D2: a human park consumed nothing, so a stray before it stays unspent."""
    events = log(STARTED, start("h"), start("a"), *PAIR, park("ok", stepId="h"))
    assert verdicts(events) == [(0, 5, "recovery", "at-risk")]
    assert scan_log(events, None, KINDS).ambiguities == ()   # h started before the stray


def test_a_discard_decision_resolves_the_ambiguities_found_before_it_only() -> None:
    ambiguous = [STARTED, start("h"), park("ok"), resumed("A"), start("h"), park("ok")]
    assert scan_log(log(*ambiguous, discard("h")), None, KINDS).ambiguities == ()
    later = scan_log(log(*ambiguous, discard("h"), resumed("B"), start("h"), park("ok")), None, KINDS)
    assert [a.seq for a in later.ambiguities] == [10]
    assert scan_log(log(*ambiguous, discard("k")), None, KINDS).refused   # another step's override


def test_an_unresolvable_step_is_treated_as_possibly_human() -> None:
    """spec section 1: a step the definition cannot resolve fails closed."""
    events = log(STARTED, start("a"), *PAIR, start("dyn"), park("ok"))
    assert scan_log(events, None, KINDS).ambiguities == (Ambiguity("dyn", "stray-before-first-start", 5),)
    assert verdicts(events) == [(0, 4, "recovery", "at-risk")]          # its park is no gate park
    known = log(STARTED, start("a"), *PAIR, start("a"), park("go1"))     # a known non-human step: a gate park
    assert (verdicts(known), scan_log(known, None, KINDS).ambiguities) == ([(0, 4, "recovery", "passed")], ())


def test_the_parallel_two_human_log_is_accepted() -> None:
    """D2: the first version of the rule credited the first park to b, then read b's
    own park as a re-park after its answer, and refused this valid 0104 log."""
    events = log(STARTED, start("h"), start("k"), park("ok-h", stepId="h"), ("ok-h", "A"), resumed("A"),
                 ("STEP_COMPLETED", {"stepId": "h", "output": "A"}), park("ok-k", stepId="k"), ("ok-k", "B"),
                 resumed("B"))
    found = scan_log(events, None, KINDS)
    assert (found.classified, found.ambiguities, found.refused) == ((), (), False)


# ------------------------------------------------------------------ the oracle: snapshots (sections 3, 5)
def snapshot(status: str = "running", **variables: Any) -> dict[str, Any]:
    return {"sequence": 4, "status": status, "suspendedOn": None, "variables": variables, "steps": {}}


def test_snapshot_entries_equal_to_empty_are_unverifiable_others_presumed_answers() -> None:
    held = snapshot(_resumePayloads=[{"ok": 1}, {}], _resumePayload={})
    assert verdicts([], held) == [(1, 0, "snapshot", "unverifiable")]
    assert scan_log([], held, KINDS).warned == {"unverifiable"}


def test_a_gate_park_in_the_retained_tail_proves_the_snapshot_spent() -> None:
    held = snapshot(_resumePayloads=[{}])
    assert verdicts(log(park(), first=5), held) == []


def test_a_terminal_snapshot_is_harmless_unless_live() -> None:
    held = snapshot("completed", _resumePayloads=[{}])
    assert verdicts([], held) == [(0, 0, "snapshot", "harmless")]
    assert verdicts([], held, live=True) == [(0, 0, "snapshot", "unverifiable")]


def test_a_pre_116_snapshot_holds_one_entry() -> None:
    found = scan_log([], snapshot(_resumePayload={}), KINDS)
    assert [(c.index, c.verdict) for c in found.classified] == [(0, "unverifiable")]
    assert (found.answers, found.listed) == (({},), False)


def test_a_snapshot_is_read_only_when_the_prefix_is_gone() -> None:
    assert scan_log(log(STARTED), snapshot(_resumePayloads=[{}]), KINDS).classified == ()


def test_the_snapshot_steps_count_as_started() -> None:
    held = {**snapshot(), "steps": {"h": {"status": "started", "attempt": 1}}}
    events = log(*PAIR, start("h"), park("ok"), first=5)
    assert scan_log(events, held, KINDS).ambiguities == ()


def test_kinds_of_a_program_as_json_and_as_a_model() -> None:
    program = {"body": [{"op": "parallel", "branches": [{"op": "step", "id": "h", "kind": "human"},
                                                        {"op": "step", "id": "a"}]}]}
    for form in (program, FlowProgram.model_validate(program)):
        kinds = kinds_of(form)
        assert (kinds("h"), kinds("a"), kinds("zz")) == ("human", "idempotent", None)


def test_classified_records_are_plain_values() -> None:
    assert Classified(0, 4, "recovery", "at-risk") == scan_log(log(STARTED, start("a"), *PAIR), None,
                                                               KINDS).classified[0]
