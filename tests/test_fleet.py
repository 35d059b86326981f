"""The fleet corpus (loomcheck.fleet) and the stray oracle it is judged by
(properties/stray_oracle.py): spec/legacy-logs.md sections 2-3, row by row, on small
hand-made logs; the old writers recording the old shapes; the downgrade hazard
(ADR 0104 D2); a reproducible corpus that validates against its published
schema; and every case replaying clean on the reference kernel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loomcheck.cli import main
from loomcheck.fleet.corpus import dump, load
from loomcheck.fleet.generate import (downgrade_hazard_cases, fixed_cases, generate, generated_case, random_program,
                                      schedule_writers)
from loomcheck.fleet.case_replay import replay_case
from loomcheck.fleet.writers import CURRENT, PRE_0104, PRE_116, PRE_120_HANDLERS, Fleet
from loomcheck.properties.stray_oracle import Ambiguity, Classified, kinds_of, scan_log
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.names import IN_DOUBT_GATE
from loomcheck.spec.programs import FlowProgram

SCHEMA = Path(__file__).resolve().parents[1] / "spec" / "schemas" / "fleet-corpus.schema.json"
HAND_WRITTEN = len(fixed_cases()) + len(downgrade_hazard_cases())
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


# ------------------------------------------------------------------ the writers
PROGRAM = {"body": [{"op": "step", "id": "a", "crash": {"at": "before-effect", "attempts": [1]}},
                    {"op": "step", "id": "h", "kind": "human", "on": "ok-h"}, {"op": "observe"},
                    {"op": "suspend", "on": "go1"}, {"op": "observe"}]}


def types(fleet: Fleet) -> list[str]:
    return [e["type"] for e in fleet.log()]


def test_the_1_19_recovery_writes_the_pair_and_the_current_one_does_not() -> None:
    for writer, pair in ((PRE_0104, True), (CURRENT, False)):
        fleet = Fleet({"f": PROGRAM})
        assert fleet.perform(writer, {"op": "start"}).result == "crashed"
        fleet.perform(writer, {"op": "recover"})
        recovered = types(fleet).index("EXECUTION_RECOVERED")
        assert (types(fleet)[recovered + 1] == "EXECUTION_RESUMED") is pair
        assert fleet.log()[recovered + 1]["payload"] == ({} if pair else {"stepId": "a", "attempt": 2})


def test_the_1_19_human_step_reparks_without_step_id_on_every_run() -> None:
    fleet = Fleet({"f": {"body": PROGRAM["body"][1:]}})
    fleet.perform(PRE_0104, {"op": "start"})
    fleet.perform(PRE_0104, {"op": "resume", "type": "ok-h", "payload": "A"})
    parks = [e["payload"]["condition"] for e in fleet.log() if e["type"] == "EXECUTION_SUSPENDED"]
    assert parks == [{"on": "ok-h"}, {"on": "ok-h"}]
    assert types(fleet).count("STEP_STARTED") == 2 and "STEP_COMPLETED" not in types(fleet)


def test_the_1_19_verdict_and_resume_as_onto_a_crash_are_entries() -> None:
    program = {"body": [{"op": "step", "id": "n", "kind": "non-idempotent",
                         "crash": {"at": "after-effect", "attempts": [1]}}, {"op": "suspend", "on": "go1"}]}
    fleet = Fleet({"f": program})
    fleet.perform(PRE_0104, {"op": "start"})
    fleet.perform(CURRENT, {"op": "recover"})
    verdict = {"stepId": "n", "resolution": "succeeded", "output": 1}
    fleet.perform(PRE_0104, {"op": "resume", "type": IN_DOUBT_GATE, "payload": verdict})
    assert fleet.log()[-1]["type"] == "EXECUTION_COMPLETED"       # go1 passed with the verdict as its answer
    crashed = Fleet({"f": PROGRAM})
    crashed.perform(PRE_0104, {"op": "start"})
    crashed.perform(PRE_0104, {"op": "resumeAs", "flowId": "f", "type": "migrate", "payload": {"m": 1}})
    assert ("EXECUTION_RESUMED", {"m": 1}) in [(e["type"], e["payload"]) for e in crashed.log()]


def test_the_1_15_snapshot_keeps_only_the_latest_entry() -> None:
    fleet = Fleet({"f": PROGRAM})
    fleet.perform(PRE_116, {"op": "start"})
    fleet.perform(PRE_116, {"op": "recover"})
    assert fleet.perform(PRE_116, {"op": "truncate", "upto": 6}).performed
    variables = (fleet.snapshot() or {})["variables"]
    assert "_resumePayloads" not in variables and variables["_resumePayload"] == {}


def test_the_pre_120_fold_serves_a_1_20_null_to_the_next_gate() -> None:
    """ADR 0104 D2, downgrade: the current kernel's in-doubt verdict and re-open write
    EXECUTION_RESUMED(null); the old fold makes it an entry, the current one does not."""
    cases = {case.id: case for case in downgrade_hazard_cases()}
    assert set(cases) == {"downgrade-indoubt-verdict", "downgrade-reopen-terminal"}
    for case in cases.values():
        hazard = case.downgrade
        assert hazard is not None and case.kind == "downgrade-hazard"
        assert [hazard.pre120Entries[i] for i in hazard.nullAt] == [None] * len(hazard.nullAt)
        assert len(hazard.pre120Entries) == len(hazard.currentEntries) + len(hazard.nullAt)
        assert hazard.receivesPre120 is None and hazard.receivesCurrent == case.final.payload
    # the same demonstration, on the fold alone
    driver = ReferenceDriver(store="memory", handlers=PRE_120_HANDLERS)
    events = [e.model_dump() for e in cases["downgrade-indoubt-verdict"].log]
    assert driver.fold(events, None)["variables"]["_resumePayloads"] == [None]
    assert "_resumePayloads" not in ReferenceDriver(store="memory").fold(events, None)["variables"]


# ------------------------------------------------------------------ the corpus
def test_fixed_cases_carry_the_verdicts_the_spec_gives() -> None:
    found = {case.id: case.expected for case in fixed_cases()}
    assert found["fixed-parallel-two-human"].outcome == "accepted"
    assert found["fixed-reparked-after-answer"].ambiguities[0].shape == "reparked-after-answer"
    assert found["fixed-stray-before-first-start"].ambiguities[0].shape == "stray-before-first-start"
    assert found["fixed-known-false-positive"].outcome == "refused"
    proves_nothing = found["fixed-human-park-proves-nothing"]
    assert (proves_nothing.outcome, proves_nothing.warned) == ("accepted", ["at-risk"])
    assert found["fixed-pre-116-snapshot"].warned == ["unverifiable"]
    assert found["fixed-pre-116-snapshot"].receives[0].value == {}


@pytest.mark.parametrize("case_id", ["fixed-stray-after-first-start", "fixed-parallel-park-read-as-gate",
                                     "fixed-retained-stray-before-first-start"])
def test_the_spec_lets_a_human_step_take_a_stray_outside_both_shapes(case_id: str) -> None:
    """Recorded as spec/legacy-logs.md judges them (accepted), so the corpus shows the
    gap: in each, human step h receives the old recovery's {} as its answer."""
    expected = next(case.expected for case in fixed_cases() if case.id == case_id)
    assert expected.outcome == "accepted" and expected.ambiguities == []
    assert [r.value for r in expected.receives or [] if r.on == "ok-h"] == [{}]


def test_the_same_seed_gives_byte_identical_output() -> None:
    first, again = dump(generate(12, seed=5)), dump(generate(12, seed=5))
    assert first == again
    assert first != dump(generate(12, seed=6))
    assert generate(4, seed=5).cases == load(first).cases[:HAND_WRITTEN + 4]   # a smaller corpus is a prefix, case by case


def test_a_corpus_validates_against_the_published_schema_and_round_trips() -> None:
    corpus = generate(25, seed=2)
    text = dump(corpus)
    Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(json.loads(text))
    assert load(text) == corpus


def test_schedules_and_programs_stay_in_bounds() -> None:
    import random

    rng = random.Random(0)
    for _ in range(50):
        program = random_program(rng)
        FlowProgram.model_validate(program)
        assert 2 <= len([op for op in program["body"] if op["op"] != "observe"]) <= 6
    assert schedule_writers(rng, "all-new", 3) == [CURRENT] * 3
    assert CURRENT not in schedule_writers(rng, "all-old", 5)
    rolling = schedule_writers(rng, "rolling", 8)
    assert rolling == sorted(rolling, key=lambda w: w == CURRENT)   # old, then new, never back


def test_every_fixed_and_hazard_case_and_a_generated_sample_replay_clean_on_the_reference() -> None:
    driver = ReferenceDriver(store="memory")
    cases = fixed_cases() + downgrade_hazard_cases() + [generated_case(11, i) for i in range(150)]
    problems = {case.id: list(replay_case(driver, case)) for case in cases}
    assert {k: v for k, v in problems.items() if v} == {}
    assert {case.expected.outcome for case in cases} == {"accepted", "refused"}


class NoWarnings:
    """A driver that cannot report warnings: everything else is still compared."""

    def __init__(self) -> None:
        self.inner = ReferenceDriver(store="memory")

    def __getattr__(self, name: str) -> Any:
        if name == "warnings":
            raise AttributeError(name)
        return getattr(self.inner, name)


def test_replay_notes_a_driver_without_warnings_and_catches_an_old_fold() -> None:
    case = next(c for c in fixed_cases() if c.id == "fixed-pre-116-snapshot")
    replayed = replay_case(NoWarnings(), case)
    assert list(replayed) == [] and replayed.notes == ["warnings not compared: the driver has no warnings()"]
    old_fold = ReferenceDriver(store="memory", handlers=PRE_120_HANDLERS)
    for hazard in downgrade_hazard_cases():
        assert replay_case(old_fold, hazard), hazard.id


# ------------------------------------------------------------------ the command
def test_the_fleet_command_writes_the_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "--count", "6", "--seed", "3", "--out", str(tmp_path / "out")]) == 0
    corpus = load((tmp_path / "out" / "corpus.json").read_text(encoding="utf-8"))
    assert (corpus.seed, corpus.count, len(corpus.cases)) == (3, 6, 6 + HAND_WRITTEN)
    said = capsys.readouterr().out
    assert "generated 6" in said and "cases per second" in said


@pytest.mark.parametrize("argv", [["--count", "many", "--out", "x"], ["--count", "-2", "--out", "x"],
                                  ["--count", "2"], ["--count", "2", "--seed", "1.5", "--out", "x"]])
def test_a_bad_fleet_argument_exits_3_with_a_message(argv: list[str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(tmp_path / a) if a == "x" else a for a in argv]
    assert main(["fleet", *argv]) == 3
    said = capsys.readouterr()
    assert "error" in said.out and "Traceback" not in said.out + said.err


def test_a_thousand_log_corpus_replays_on_the_reference_with_every_verdict_as_recorded() -> None:
    """Issue 6's bar: 1,000 generated logs (and the fixed cases), written to the corpus file
    format and read back as another kernel's suite would, replay on the reference kernel
    with its default SQLite store reaching every recorded verdict."""
    from loomcheck.fleet.corpus import dump, load
    from loomcheck.fleet.generate import generate
    from loomcheck.fleet.case_replay import replay_case
    from loomcheck.reference.driver import ReferenceDriver

    corpus = load(dump(generate(1000, 1)))
    driver = ReferenceDriver()
    try:
        problems = [(case.id, problem) for case in corpus.cases for problem in replay_case(driver, case)]
    finally:
        driver.close()
    assert len(corpus.cases) >= 1000 and problems == []
    assert {c.expected.outcome for c in corpus.cases} == {"accepted", "refused"}
