"""Two cases the predicates once misjudged, each a committed regression log: the
reference passes it, and so does a correct kernel that takes the other admissible
path; the mutants the predicates exist for are still caught on the same script."""

from __future__ import annotations

import importlib
from typing import Any

from loomcheck.run.replay import run_operations
from loomcheck.contract.script import from_model
from loomcheck.contract.session import Session, hello_of
from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.files import SPEC_ROOT
from loomcheck.spec.regressions import load_regression


def operations_of(name: str) -> tuple[list[Any], list[str]]:
    log = load_regression(SPEC_ROOT / "regressions" / f"{name}.json")
    return [from_model(m) for m in log.operations], log.invariants


def violations(driver: ReferenceDriver, operations: list[Any], invariants: list[str]) -> dict[str, list[str]]:
    result = run_operations(Session(driver, frozenset(hello_of(driver).features)), operations, invariants)
    assert result.failure is None, result.failure
    found: dict[str, list[str]] = {}
    for violation in result.violations:
        found.setdefault(violation.invariant, []).append(violation.message)
    return found


class RetriesAFailedAttempt(FlowContext):
    """A correct kernel's other path: a non-idempotent attempt that recorded STEP_FAILED is
    over, not in doubt, so a re-run (after a resumeAs re-opened it) starts a fresh attempt."""

    def run(self, op):  # type: ignore[no-untyped-def]
        frame = self.state.steps.get(op.id)
        if op.kind == "non-idempotent" and frame is not None and frame.get("status") == "failed":
            return self._attempt(op, int(frame.get("attempt") or 1) + 1)
        return super().run(op)


def test_the_kernels_own_verdict_is_not_blamed_on_an_effect_that_emits_its_id() -> None:
    operations, invariants = operations_of("0104-effect-emits-the-verdict-id")
    assert violations(ReferenceDriver(store="memory"), operations, invariants) == {}
    # The effect's emit of the reserved id must still be refused: a kernel that records it
    # (here rewritten into the step's namespace) is caught on the same script.
    leaky = importlib.import_module("mutants.reserved_decision_ids").make()
    found = violations(leaky, operations, invariants)
    assert list(found) == ["emit.reserved-decision-ids"], found
    assert "rewritten into step 'pay'" in found["emit.reserved-decision-ids"][0]


def test_a_fresh_attempt_after_a_failed_one_needs_no_verdict() -> None:
    operations, invariants = operations_of("0104-resume-as-reopens-a-failed-attempt")
    assert violations(ReferenceDriver(store="memory"), operations, invariants) == {}
    retrying = ReferenceDriver(store="memory", context_class=RetriesAFailedAttempt)
    result = run_operations(Session(retrying, frozenset(hello_of(retrying).features)), operations, invariants)
    assert [e["type"] for e in result.logs["x1"][-3:]] == ["STEP_STARTED", "STEP_COMPLETED", "EXECUTION_COMPLETED"]
    assert result.violations == [], [v.message for v in result.violations]


def test_an_unfinished_attempt_retried_without_a_verdict_is_still_caught() -> None:
    """The same rule where it applies: attempt 1 crashed, so attempt 2 needs a retry-fresh verdict."""
    from loomcheck.contract.script import Define, Recover, Start

    program = {"body": [{"op": "step", "id": "pay", "kind": "non-idempotent", "output": "receipt",
                         "crash": {"at": "after-effect", "attempts": [1]}}, {"op": "complete"}]}
    operations = [Define("f", program), Start("x1", "f"), Recover("x1")]
    retried = importlib.import_module("mutants.indoubt_retried").make()
    found = violations(retried, operations, ["indoubt.parks-per-attempt"])
    assert "no retry-fresh verdict for attempt 1" in found["indoubt.parks-per-attempt"][0]
    assert violations(ReferenceDriver(store="memory"), operations, ["indoubt.parks-per-attempt"]) == {}
