"""Replay one fleet case against a kernel through the driver interface
(contract/driver.py) and list what differs from the recorded verdict.

Only the Driver protocol's methods are used (reset, define_flow, load, resume,
resume_as, recover, read_log, read_state), plus `warnings()` when the driver has
it: a kernel that cannot report its ADR 0104 D2 warnings is still checked on
everything else, and the result says the warnings were not compared.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from loomcheck.fleet.corpus import Case
from loomcheck.contract.driver import Outcome
from loomcheck.spec.names import OBSERVED_EVENT

JSON = Any
REFUSAL = "ambiguous-legacy-answers"


class Problems(list[str]):
    """The problems found (empty: the driver reached every recorded verdict), and
    notes on what could not be compared, which are not problems."""

    def __init__(self, problems: Iterable[str] = (), notes: Iterable[str] = ()) -> None:
        super().__init__(problems)
        self.notes: list[str] = list(notes)


def replay_case(driver: Any, case: Case) -> Problems:
    """Reset, define the flows, load the log and snapshot, perform the final
    operation, then compare it with the case's `expected` block."""
    problems = Problems()
    driver.reset()
    for flow_id, program in {case.flowId: case.program, **case.targets}.items():
        defined = driver.define_flow(flow_id, program)
        if not defined.ok:
            return Problems([f"define_flow({flow_id!r}) refused: {defined.reason}"])
    loaded = driver.load(case.executionId, [e.model_dump(mode="json") for e in case.log], case.snapshot)
    if not loaded.ok:
        return Problems([f"load refused: {loaded.reason} {loaded.message}"])
    before = driver.read_log(case.executionId)
    outcome = _perform(driver, case)
    after = driver.read_log(case.executionId)
    problems += _outcome_problems(case, outcome, before, after)
    if outcome.ok and case.expected.outcome == "accepted":
        problems += _run_problems(case, driver.read_state(case.executionId), before, after)
    _compare_warnings(driver, case, problems)
    return problems


def _perform(driver: Any, case: Case) -> Outcome:
    final, x = case.final, case.executionId
    if final.op == "resume":
        return driver.resume(x, str(final.type), final.payload)
    if final.op == "resumeAs":
        return driver.resume_as(x, str(final.flowId), str(final.type), final.payload)
    return driver.recover(x)


def _outcome_problems(case: Case, outcome: Outcome, before: list[JSON], after: list[JSON]) -> list[str]:
    """ADR 0104 D2: refused ambiguous-legacy-answers with nothing appended, or accepted."""
    if case.expected.outcome == "refused":
        problems = []
        if outcome.ok:
            problems.append(f"{case.final.op} was accepted; expected refused {REFUSAL}")
        elif outcome.reason != REFUSAL:
            problems.append(f"{case.final.op} was refused {outcome.reason}; expected {REFUSAL}")
        if after != before:
            problems.append(f"a refusal appended {len(after) - len(before)} event(s)")
        return problems
    if not outcome.ok:
        return [f"{case.final.op} was refused {outcome.reason} ({outcome.message}); expected accepted"]
    return []


def _run_problems(case: Case, state: dict[str, JSON], before: list[JSON], after: list[JSON]) -> list[str]:
    """The answer list after the operation, and what the run's suspend points received."""
    problems = []
    expected = case.expected
    answers = answers_of(state)
    if not _same(answers, expected.answers):
        problems.append(f"answers after the operation are {_show(answers)}; expected {_show(expected.answers)}")
    last = before[-1]["seq"] if before else 0
    observed = [e["payload"] for e in after if e["seq"] > last and e["type"] == OBSERVED_EVENT]
    wanted = [r.model_dump(mode="json") for r in expected.observed or []]
    if not _same(observed, wanted):
        problems.append(f"the run observed {_show(observed)}; expected {_show(wanted)}")
    if expected.status is not None and state.get("status") != expected.status:
        problems.append(f"the execution is {state.get('status')} after the run; expected {expected.status}")
    return problems


def _compare_warnings(driver: Any, case: Case, problems: Problems) -> None:
    """The set of verdicts warned for this execution must be the expected warned set."""
    if not hasattr(driver, "warnings"):
        problems.notes.append("warnings not compared: the driver has no warnings()")
        return
    warned = {w.get("verdict") for w in driver.warnings() if w.get("executionId") == case.executionId}
    wanted = set(case.expected.warned)
    if warned != wanted:
        problems.append(f"warned {sorted(map(str, warned))}; expected {sorted(wanted)}")


def answers_of(state: dict[str, JSON]) -> list[JSON]:
    """The answer list, with ADR 0057's legacy fallback (a pre-1.16 single entry)."""
    variables = state.get("variables") or {}
    if "_resumePayloads" in variables:
        return list(variables["_resumePayloads"])
    return [variables["_resumePayload"]] if "_resumePayload" in variables else []


def _same(a: JSON, b: JSON) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _show(value: JSON) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 200 else text[:197] + "..."


__all__ = ["replay_case", "Problems", "answers_of"]
