"""The fleet corpus (loomcheck.fleet): the old writers recording the old shapes; the
downgrade hazard (ADR 0104 D2); a reproducible corpus that validates against its
published schema; and every case replaying clean on the reference kernel. The oracle
that judges the cases has its own tests (tests/test_stray_oracle.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loomcheck.cli import main
from loomcheck.fleet.case_replay import replay_case
from loomcheck.fleet.corpus import dump, load
from loomcheck.fleet.generate import generate, generated_case, random_program, schedule_writers
from loomcheck.fleet.scripted_cases import downgrade_hazard_cases, fixed_cases
from loomcheck.fleet.writers import CURRENT, PRE_0104, PRE_116, PRE_120_HANDLERS, Fleet
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.names import IN_DOUBT_GATE
from loomcheck.spec.programs import FlowProgram

SCHEMA = Path(__file__).resolve().parents[1] / "spec" / "schemas" / "fleet-corpus.schema.json"
HAND_WRITTEN = len(fixed_cases()) + len(downgrade_hazard_cases())


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
    """1,000 generated logs (and the fixed cases), written to the corpus file format and
    read back as another kernel's suite would, replay on the reference kernel with its
    default SQLite store reaching every recorded verdict."""
    corpus = load(dump(generate(1000, 1)))
    driver = ReferenceDriver()
    try:
        problems = [(case.id, problem) for case in corpus.cases for problem in replay_case(driver, case)]
    finally:
        driver.close()
    assert len(corpus.cases) >= 1000 and problems == []
    assert {c.expected.outcome for c in corpus.cases} == {"accepted", "refused"}
