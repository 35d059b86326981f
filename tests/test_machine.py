"""The state machine itself: its CI profile is reproducible, and it reaches the
situations the invariants are about (so none of them passes vacuously)."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import replace
from collections import Counter
from pathlib import Path

import pytest

from loomcheck.contract.script import describe
from loomcheck.contract.session import Session, hello_of
from loomcheck.machine.state_machine import PROFILES, run_stateful
from loomcheck.properties.checks import all_predicates
from loomcheck.reference.driver import ReferenceDriver


def _run(record: list[str] | None = None, counts: Counter | None = None, examples: int | None = None) -> int:
    driver = ReferenceDriver(store="memory")
    session = Session(driver, frozenset(hello_of(driver).features))
    apply = session.apply

    def recording(op):
        step = apply(op)
        if record is not None:
            record.append(describe(op) + " -> " + step.outcome.short())
        if counts is not None:
            counts["crashed"] += step.outcome.crashed
            if not step.outcome.ok:
                counts["refused:" + str(step.outcome.reason)] += 1
            for event in step.log_after[len(step.log_before):]:
                payload = event["payload"] if isinstance(event["payload"], dict) else {}
                counts[event["type"]] += 1
                if event["type"] == "EXECUTION_SUSPENDED" and "stepId" in payload.get("condition", {}):
                    counts["park with stepId"] += 1
                if event["type"] == "EXECUTION_MIGRATED" and "migratedInput" in payload:
                    counts["state migrated"] += 1
                if event["type"] == "EXECUTION_FAILED":
                    counts["failed:" + str((payload.get("error") or {}).get("reason"))] += 1
        return step

    session.apply = recording  # type: ignore[method-assign]
    budget = PROFILES["ci"] if examples is None else replace(PROFILES["ci"], max_examples=examples)
    result = run_stateful(session, list(all_predicates()), budget)
    assert not result.failures and not result.errors
    return result.steps


def test_the_ci_profile_does_not_depend_on_the_modules_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis mines constants from local modules; loomcheck pins that pool, so loading
    more code (here, a module full of string literals) cannot change the examples. A tenth
    of the CI budget suffices: without the pin, the first examples already differ."""
    first: list[str] = []
    _run(first, examples=30)
    (tmp_path / "literal_soup.py").write_text(textwrap.dedent('''
        WORDS = ["go1", "__proto__", "EXECUTION_RESUMED", "retry-fresh", "approve", "x" * 3, 12345, 6.5]
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    import literal_soup  # noqa: F401

    second: list[str] = []
    _run(second, examples=30)
    sys.modules.pop("literal_soup", None)
    assert first == second


def test_the_ci_profile_reaches_every_situation_it_checks() -> None:
    counts: Counter = Counter()
    steps = _run(counts=counts)
    assert steps > 1_000
    must_reach = {
        "crashed": 10, "EXECUTION_RECOVERED": 10, "EFFECT_INDOUBT": 5, "DECISION_RECORDED": 5,
        "park with stepId": 10, "EXECUTION_MIGRATED": 5, "STEP_COMPLETED": 20,
        "refused:not-suspended": 10, "refused:gate-mismatch": 10, "refused:kernel-namespace": 10,
        "refused:terminal": 5, "refused:not-a-verdict": 1, "refused:invalid-input": 1, "refused:invalid-payload": 5,
        "failed:kernel-type": 1, "failed:invalid-meter": 1, "failed:reserved-decision-id": 1,
        "failed:in-doubt verdict: failed": 1,
        # ADR 0056: redeployed code refusing plain resumes, transforms that migrate and that refuse
        "refused:code-mismatch": 20, "state migrated": 20, "refused:input-contract": 5, "refused:transform-failed": 5,
        "refused:transform-returned-nothing": 1, "refused:unknown-transform": 1,
    }
    short = {name: counts[name] for name, least in must_reach.items() if counts[name] < least}
    assert not short, f"the CI profile reached these too rarely (seen, against the floor {must_reach}): {short}"


def test_every_failing_invariant_is_found_however_many_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """A peer may fail sixteen invariants. Each round of the machine stops at its first failure,
    so the rounds go on until a round finds none: an invariant left over is never reported as a
    pass after a truncated exploration (the loop once stopped after four rounds)."""
    from loomcheck.machine import state_machine as machine
    from loomcheck.machine.findings import InvariantViolated
    from loomcheck.machine.kernel_rules import Counters
    from loomcheck.properties.registry import Violation
    from loomcheck.reference.driver import ReferenceDriver

    ids = [f"inv.{n}" for n in range(7)]
    rounds: list[list[str]] = []

    def fake_build(session: object, invariant_ids: list[str], counters: Counters) -> list[str]:
        rounds.append(list(invariant_ids))
        return list(invariant_ids)

    def fake_run(remaining: list[str], budget: object, derandomize: bool, database: object = None) -> list[BaseException]:
        failing = [i for i in remaining if i != "inv.6"]  # every invariant but one fails, one per round
        return [InvariantViolated([Violation(failing[0], "broken")], [])] if failing else []

    monkeypatch.setattr(machine, "machine_for", fake_build)
    monkeypatch.setattr(machine.hypothesis, "seed", lambda seed: (lambda m: m))
    monkeypatch.setattr(machine, "_run_once", fake_run)
    driver = ReferenceDriver(store="memory")
    result = machine.run_stateful(Session(driver, frozenset()), ids, machine.PROFILES["ci"])
    driver.close()
    assert sorted(result.failures) == ids[:6]
    assert rounds[-1] == ["inv.6"] and len(rounds) == 7  # the survivor was explored in a round of its own
