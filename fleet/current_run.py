"""The run of a flow program on the current kernel (EVENT_SCHEMA 1.20.0), played by the
ADRs' rules rather than by the reference kernel: what each suspend point receives, what
the observes append, and the status the run ends in (docs/fleet.md)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from loomcheck.spec.names import DISCARD_DECISION_PREFIX, HUMAN_GATE, INDOUBT_DECISION_PREFIX

JSON = Any
Program = dict[str, JSON]
VERDICTS = ("succeeded", "failed", "retry-fresh")
PARKED, CRASHED, FAILED, PASSED = "suspended", "running", "failed", "passed"


@dataclass
class Run:
    """The folded state the current kernel's run starts from, and what the run did."""

    answers: list[JSON]
    latest: JSON
    steps: dict[str, dict[str, JSON]]
    decisions: dict[str, JSON]
    facts: set[str]
    consumed: int = 0
    passed: list[dict[str, JSON]] = field(default_factory=list)
    observed_upto: int = 0
    appended: list[dict[str, JSON]] = field(default_factory=list)

    def take(self) -> tuple[bool, JSON]:
        """ADR 0057: the next entry in call order, if one is recorded."""
        if self.consumed < len(self.answers):
            self.consumed += 1
            return True, self.answers[self.consumed - 1]
        return False, None


def fact_key(payload: JSON) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def expected_run(program: Program, run: Run) -> str:
    """Play the program from the top as the current kernel runs it; the status it
    ends in. ADR 0057: the i-th suspend point in call order takes entry i. ADR 0104
    D1: a human step takes an answer only once it has parked, completes with it, and
    still consumes its entry on replay; an in-doubt park consumes none. D2: a
    recorded __loom_discard__:<step> makes the step skip that many entries first."""
    point = 0
    for op in program.get("body") or []:
        kind = op.get("op")
        if kind == "complete":
            return "completed"
        if kind == "observe":
            _observe(run)
            continue
        branches = op.get("branches") if kind == "parallel" else [op]
        if branches is None or any(b.get("op") not in ("step", "suspend") for b in branches):
            raise ValueError(f"the fleet's expectation does not cover the {kind!r} op")
        outcomes: list[str] = []
        for branch in branches:
            outcome = _call(branch, point, run)
            point += is_suspend_point(branch)
            if outcome in (CRASHED, FAILED):
                return outcome  # a crash or a failed step ends the run (not caught by a parallel)
            outcomes.append(outcome)
        if PARKED in outcomes:
            return PARKED
    return "completed"


def is_suspend_point(op: Mapping[str, JSON]) -> int:
    return int(op.get("op") == "suspend" or (op.get("op") == "step" and op.get("kind") == "human"))


def _call(op: Mapping[str, JSON], point: int, run: Run) -> str:
    if op["op"] == "suspend":
        taken, value = run.take()
        if not taken:
            return PARKED
        run.passed.append({"gate": point, "on": op["on"], "value": copy.deepcopy(value)})
        return PASSED
    if op.get("kind") == "human":
        return _human(op, point, run)
    return _effect_step(op, run)


def _human(op: Mapping[str, JSON], point: int, run: Run) -> str:
    step_id, on = str(op["id"]), str(op.get("on") or HUMAN_GATE)
    frame = run.steps.get(step_id)
    if frame is None:
        run.steps[step_id] = {"status": "started", "attempt": 1}  # it starts and parks; consumes nothing
        return PARKED
    count = run.decisions.get(f"{DISCARD_DECISION_PREFIX}:{step_id}")
    if type(count) is int and count > 0:
        run.consumed += count  # the operator's override, live and on every replay
    if frame.get("status") == "completed":
        run.take()  # replay still consumes its entry, so no later gate gets it
        run.passed.append({"gate": point, "on": on, "value": copy.deepcopy(frame.get("output"))})
        return PASSED
    taken, value = run.take()
    if not taken:
        return PARKED
    frame.update(status="completed", output=copy.deepcopy(value))
    run.passed.append({"gate": point, "on": on, "value": copy.deepcopy(value)})
    return PASSED


def _effect_step(op: Mapping[str, JSON], run: Run) -> str:
    step_id = str(op["id"])
    frame = run.steps.get(step_id)
    if frame is not None and frame.get("status") == "completed":
        return PASSED
    attempt = 1
    if frame is not None:
        previous = int(frame.get("attempt") or 1)
        attempt = previous + 1
        if op.get("kind") == "non-idempotent":
            verdict = _verdict(run, step_id, previous, frame)
            if verdict is None:
                frame["inDoubtAttempt"] = previous
                return PARKED  # in doubt: parks for an operator's verdict, consuming no entry
            if verdict["resolution"] == "succeeded":
                frame.update(status="completed", output=copy.deepcopy(verdict.get("output")))
                return PASSED
            if verdict["resolution"] == "failed":
                return FAILED
    crash = op.get("crash")
    if isinstance(crash, dict) and attempt in (crash.get("attempts") or [1]):
        run.steps[step_id] = {"status": "started", "attempt": attempt}
        return CRASHED
    run.steps[step_id] = {"status": "completed", "attempt": attempt, "output": copy.deepcopy(op.get("output"))}
    return PASSED


def _verdict(run: Run, step_id: str, attempt: int, frame: Mapping[str, JSON]) -> dict[str, JSON] | None:
    """ADR 0104 D1: the verdict for the CURRENT attempt only, beside the step's
    EFFECT_INDOUBT for it; a pre-0104 verdict (the latest entry) only then too."""
    if frame.get("inDoubtAttempt") != attempt:
        return None
    for candidate in (run.decisions.get(f"{INDOUBT_DECISION_PREFIX}:{step_id}:{attempt}"), run.latest):
        if isinstance(candidate, dict) and candidate.get("stepId") == step_id \
                and candidate.get("resolution") in VERDICTS:
            return candidate
    return None


def _observe(run: Run) -> None:
    """What each suspend point passed since the last observe; a fact the log already
    holds is not appended again."""
    for passed in run.passed[run.observed_upto:]:
        key = fact_key(passed)
        if key not in run.facts:
            run.facts.add(key)
            run.appended.append(copy.deepcopy(passed))
    run.observed_upto = len(run.passed)
