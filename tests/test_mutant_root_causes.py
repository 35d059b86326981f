"""Every seeded mutant, inside the permuted reference (tests/permuted: every choice the ADRs
leave open made the other way), on a realistic selection (its CATCHES plus the generic kernel
invariants): each invariant written for it fails, and the report's first root cause names one of
them, so the grouping puts the bug's own decision first, not a generic consequence of it.
tests/mutant_root_causes.py prints the per-mutant table (root causes versus invariants failed)."""

from __future__ import annotations

import pytest

from loomcheck.spec.catalogue import load_catalogue
from mutant_root_causes import run
from mutants import CATCHES

DEMONSTRATIONS = ("documented-hazard", "documented-residual")
# The slowest of the battery (a minute each at their budgets), run by `pytest -m campaign`; each of
# them is still caught in the default run by every one of its pairs in tests/test_mutants.py.
CAMPAIGN_MUTANTS = frozenset({"pinned_resume_as", "pre_115_fold", "timer_passthrough"})


def test_a_campaign_mutant_keeps_all_its_pairs_in_the_default_run() -> None:
    from test_mutants import CAMPAIGN_PAIRS

    assert CAMPAIGN_MUTANTS <= set(CATCHES)
    assert not {f"{m}-{i}" for m in CAMPAIGN_MUTANTS for i in CATCHES[m]} & CAMPAIGN_PAIRS


@pytest.mark.parametrize("mutant", [pytest.param(m, marks=[pytest.mark.campaign] if m in CAMPAIGN_MUTANTS else [])
                                    for m in CATCHES])
def test_the_first_root_cause_names_the_invariant_written_for_the_mutant(mutant: str) -> None:
    catalogue = load_catalogue()
    judged = [i for i in CATCHES[mutant] if catalogue.get(i).kind not in DEMONSTRATIONS]
    outcome = run(mutant)
    assert outcome.exit in (0, 1), outcome
    if judged:
        missed = [i for i in judged if i not in outcome.failed]
        assert not missed, f"{mutant} inside the permuted reference is not caught by {missed} ({outcome})"
        assert outcome.causes, f"{mutant}: no root cause reported ({outcome})"
        assert outcome.causes[0] in CATCHES[mutant], \
            f"{mutant}: the first root cause is {outcome.causes[0]}, not one of {CATCHES[mutant]} ({outcome})"
    else:  # a documented hazard or residual is demonstrated, never a failure or a root cause
        assert not outcome.causes and outcome.demonstrations, outcome
