"""The rule that groups failures by root cause (run/rootcauses.py): one counterexample,
one finding, headed by the invariant whose decision it most directly breaks."""

from __future__ import annotations

from loomcheck.run.rootcauses import GENERIC, Evidence, blame_difference, directness, group
from loomcheck.spec.catalogue import load_catalogue


def e(invariant: str, *violates: str, size: int = 3) -> Evidence:
    return Evidence(invariant, frozenset({invariant, *violates}), size)


def test_generic_invariants_are_in_the_catalogue_and_rank_after_specific_ones() -> None:
    ids = set(load_catalogue().ids)
    assert set(GENERIC) <= ids
    assert directness("gate.i-receives-entry-i") < min(GENERIC.values())
    assert directness("log.append-only") < directness("fold.matches-reference")


def test_a_counterexample_violating_several_invariants_is_one_cause_headed_by_the_specific_one() -> None:
    causes = group([e("fold.matches-reference", "gate.i-receives-entry-i", size=2),
                    e("gate.i-receives-entry-i", "fold.matches-reference", "log.append-only", size=5),
                    e("log.append-only", size=1)])
    assert [(c.head, c.also) for c in causes] == [("gate.i-receives-entry-i", ["log.append-only", "fold.matches-reference"])]


def test_two_bugs_breaking_one_generic_invariant_stay_two() -> None:
    causes = group([e("gate.i-receives-entry-i", "fold.matches-reference"),
                    e("typed.parsed-before-append", "fold.matches-reference"),
                    e("fold.matches-reference", "gate.i-receives-entry-i", "typed.parsed-before-append")])
    assert [c.head for c in causes] == ["gate.i-receives-entry-i", "typed.parsed-before-append"]
    assert causes[0].also == ["fold.matches-reference"] and causes[1].also == []


def test_the_smallest_counterexample_among_specific_ones_heads() -> None:
    causes = group([e("answer.one-suspend-point", "gate.i-receives-entry-i", size=6),
                    e("gate.i-receives-entry-i", "answer.one-suspend-point", size=3)])
    assert [(c.head, c.also) for c in causes] == [("gate.i-receives-entry-i", ["answer.one-suspend-point"])]


def test_an_own_counterexample_that_violates_an_earlier_head_joins_its_cause() -> None:
    causes = group([e("gate.i-receives-entry-i", size=3), e("answer.one-suspend-point", "gate.i-receives-entry-i", size=6)])
    assert [(c.head, c.also, c.same) for c in causes] == [("gate.i-receives-entry-i", [], ["answer.one-suspend-point"])]


def test_unrelated_failures_are_causes_of_their_own_and_every_failure_is_in_exactly_one() -> None:
    evidence = [e("gate.i-receives-entry-i"), e("typed.sharp-edge"), e("log.append-only"), e("refusal.typed-reason")]
    causes = group(evidence)
    assert len(causes) == 4
    members = [m for c in causes for m in (c.head, *c.also, *c.same)]
    assert sorted(members) == sorted(x.invariant for x in evidence)


DECISIONS = {"migration.target-input-contract": ("0056", "Consequences"), "version.pinned": ("0056", "Context"),
             "refusal.typed-reason": ("0104", "D4"), "gate.beyond-answers-parks": ("0057", "Decision"),
             "gate.completes-after-n-answers": ("0057", "Consequences")}
REFUSALS = {"input-contract": ("0056", "Consequences"), "not-suspended": ("0104", "D4")}


def test_a_difference_counts_against_the_invariant_of_the_refusal_it_differs_in() -> None:
    named = ["version.pinned", "migration.target-input-contract", "refusal.typed-reason"]
    assert blame_difference("operation 5: expected refused:input-contract, got ok", named, DECISIONS, REFUSALS) == \
        "migration.target-input-contract"


def test_a_generic_invariant_sharing_the_refusals_decision_is_not_blamed_first() -> None:
    named = ["gate.completes-after-n-answers", "gate.beyond-answers-parks", "refusal.typed-reason"]
    assert blame_difference("operation 5: expected refused:not-suspended, got ok", named, DECISIONS, REFUSALS) == \
        "gate.completes-after-n-answers"


def test_an_event_difference_counts_against_the_first_named_specific_invariant() -> None:
    named = ["refusal.typed-reason", "gate.beyond-answers-parks", "gate.completes-after-n-answers"]
    assert blame_difference("x #3: expected RESUMED {}, got STEP_STARTED {}", named, DECISIONS, REFUSALS) == \
        "gate.beyond-answers-parks"
    assert blame_difference("x #3: expected ...", ["refusal.typed-reason"], DECISIONS, REFUSALS) == "refusal.typed-reason"
    assert blame_difference("x #3: expected ...", [], DECISIONS, REFUSALS) is None


def test_a_failure_with_no_counterexample_written_comes_after_those_with_one() -> None:
    causes = group([Evidence("legacy.warn-memory-bounded", frozenset({"legacy.warn-memory-bounded"})),
                    e("gate.i-receives-entry-i", size=9)])
    assert [c.head for c in causes] == ["gate.i-receives-entry-i", "legacy.warn-memory-bounded"]
