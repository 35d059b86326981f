"""z3 over the abstract model of the gate-answer discipline (symbolic/gate_model.py,
gate_relation.py, gate_agreement.py):
bounded model checking, the induction proof for every G and every history length,
the seeded broken relations each refuted with a readable counterexample, and the
encoding checked against the Python model it encodes."""

from __future__ import annotations

import pytest
import z3

from loomcheck.symbolic.gate_agreement import agrees_with_python
from loomcheck.symbolic.gate_model import bmc, induction, reach, verdict_of
from loomcheck.symbolic.gate_relation import BROKEN, COMPLETED, CRASHED


def test_bmc_finds_no_violation_up_to_the_bound() -> None:
    result = bmc(bound=12, budget_s=15.0)
    assert result.verdict == "proved" and result.reached == 12, result


def test_the_gate_answer_invariant_is_proved_by_induction_for_every_number_of_gates() -> None:
    proof = induction()
    assert (proof.base, proof.step, proof.implies) == ("proved", "proved", "proved")
    assert proof.counterexample == []


def test_the_relation_is_not_vacuous() -> None:
    # A proof over an unsatisfiable relation would prove anything: histories to completion
    # exist, and to a crash after a gate passed.
    trace = reach(4, lambda G, s: s.status == COMPLETED, gates=3)
    assert trace is not None and "completed, 3 answer(s)" in trace[-1], trace
    trace = reach(3, lambda G, s: z3.And(s.status == CRASHED, s.n == 1), gates=2)
    assert trace is not None and "crashed, 1 answer(s)" in trace[-1], trace


EXPECTED = {
    "recovery_answers": ("answer.one-suspend-point", "recover"),
    "early_answer": ("answer.one-suspend-point", "resume"),
    "any_gate": ("answer.addressed-while-parked", "resume"),
    "single_slot": ("gate.i-receives-entry-i", "re"),   # a resume or a recovery: any re-run serves the latest
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_relation_is_refuted_by_bmc_and_induction(name: str) -> None:
    invariant, culprit = EXPECTED[name]
    checked = bmc(bound=6, rules=BROKEN[name])
    assert checked.verdict == "violated" and checked.reached < 3
    assert invariant in checked.counterexample[-1], checked.counterexample
    assert any(culprit in line for line in checked.counterexample[1:-1])
    proof = induction(BROKEN[name])
    assert proof.step == "violated" and proof.base == "proved"
    assert proof.counterexample and invariant in proof.counterexample[-1], proof.counterexample
    assert culprit in proof.counterexample[2]


def test_the_encoding_is_the_python_model() -> None:
    for gate_count in (1, 2):
        checked, disagreements = agrees_with_python(gate_count)
        assert disagreements == [] and checked > 200


def test_the_differential_catches_an_encoding_that_differs() -> None:
    checked, disagreements = agrees_with_python(1, rules=BROKEN["recovery_answers"], stop_at_first=True)
    assert disagreements and "recover" in disagreements[0]


def test_unknown_is_never_proved() -> None:
    assert verdict_of(z3.unknown) == "unknown"
    assert verdict_of(z3.unsat) == "proved" and verdict_of(z3.sat) == "violated"
