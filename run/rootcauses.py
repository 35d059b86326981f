"""Root causes: one counterexample, one finding.

A bug usually breaks several invariants at once, and every failing invariant keeps a
counterexample of its own. After the checks, the runner replays each failing invariant's
counterexample judging every failing invariant (or, for a committed regression log, takes
its replay); `group` then reports each counterexample once, headed by the invariant whose
decision it most directly breaks, with the other invariants it violates under it.

The rule of directness is data (GENERIC) and two small pure functions (`directness`,
`blame_difference`), so a reader can see, and a test can pin, why a head was chosen."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from loomcheck.reports.model import InvariantRecord, RootCause

# Invariants every kernel rule also shows up in: a bug of one ADR decision usually breaks
# one of these too, so an ADR-specific invariant heads a root cause before any of them.
# Among themselves: the kernel model's own rules first (append-only, refuse before append),
# then the fold's consistency with the log, then the abstract gate model, and last the
# differential against the reference, the least direct (it says only that something differs).
GENERIC: dict[str, int] = {
    "log.append-only": 1,
    "refusal.append-nothing": 1,
    "refusal.typed-reason": 1,
    "fold.state-is-fold-of-log": 2,
    "model.refines-gate-discipline": 3,
    "fold.matches-reference": 4,
}
SPECIFIC = 0


def directness(invariant: str) -> int:
    """Lower is more direct: 0 for an invariant of one ADR decision, GENERIC's rank otherwise."""
    return GENERIC.get(invariant, SPECIFIC)


@dataclass(frozen=True)
class Evidence:
    """One failing invariant's counterexample and every failing invariant it violates."""

    invariant: str
    violates: frozenset[str]  # includes `invariant` itself
    size: int | None = None   # operations of the counterexample (smaller first; none written: last)
    counterexample: str | None = None


@dataclass
class Cause:
    head: str
    evidence: Evidence
    also: list[str] = field(default_factory=list)  # the other failing invariants its counterexample violates
    same: list[str] = field(default_factory=list)  # failing invariants whose own counterexample violates `head`


def group(evidence: Iterable[Evidence], order: Mapping[str, int] | None = None) -> list[Cause]:
    """Each failing invariant belongs to exactly one cause. Counterexamples are taken most direct
    invariant first, then smallest, then in catalogue `order`. One whose invariant is not yet covered
    and that violates the head of a cause already formed joins that cause (`same`: it shows the same
    bug); otherwise it becomes a cause holding every uncovered invariant it violates, headed by the
    most direct of them (its own invariant on a tie). Two bugs that both break only a generic
    invariant stay two: a generic invariant never heads before a specific one's cause is formed."""
    order = order or {}
    items = sorted(evidence, key=lambda e: (directness(e.invariant), e.size is None, e.size or 0,
                                            order.get(e.invariant, 0), e.invariant))
    failing = {e.invariant for e in items}
    covered: set[str] = set()
    causes: list[Cause] = []
    for item in items:
        if item.invariant in covered:
            continue
        joined = next((c for c in causes if c.head in item.violates), None)
        if joined is not None:
            joined.same.append(item.invariant)
            covered.add(item.invariant)
            continue
        members = sorted((failing & set(item.violates)) - covered | {item.invariant},
                         key=lambda i: (directness(i), i != item.invariant, order.get(i, 0), i))
        covered.update(members)
        causes.append(Cause(head=members[0], evidence=item, also=members[1:]))
    return causes


_OUTCOME = re.compile(r"^operation \d+: expected (?P<want>\S+), got (?P<got>\S+)")


def blame_difference(difference: str, candidates: list[str], decisions: Mapping[str, tuple[str | None, str]],
                     refusals: Mapping[str, tuple[str | None, str]]) -> str | None:
    """The one invariant a regression log's difference from its expectation counts against,
    among the log's invariants that the run judges (`candidates`, in the log's order): not every
    invariant the log names. An outcome that differs in a refusal reason goes to the ADR-specific
    invariant of that refusal's decision (`refusals`: reason -> (adr, decision); `decisions`: invariant ->
    (adr, decision)) if the log names one; otherwise, and for a log event that differs, to the most
    direct invariant the log names, the first named on a tie."""
    if not candidates:
        return None
    outcome = _OUTCOME.match(difference)
    if outcome is not None:
        reasons = [o.split(":", 1)[1] for o in (outcome["want"], outcome["got"]) if o.startswith("refused:")]
        for reason in reasons:
            decided = refusals.get(reason)
            # only an ADR-specific invariant: a generic one (refusal.*) shares the decisions it generalises
            same = [c for c in candidates if decided is not None and decisions.get(c) == decided
                    and directness(c) == SPECIFIC]
            if same:
                return min(same, key=lambda c: (directness(c), candidates.index(c)))
    return min(candidates, key=lambda c: (directness(c), candidates.index(c)))


def root_causes(records: list[InvariantRecord], evidence: Mapping[str, Evidence], order: Mapping[str, int],
                strict: bool) -> list[RootCause]:
    """The report's root causes: the failing records grouped by what their counterexamples violate
    (`evidence`, by failing invariant; one without evidence violates only itself). A profile
    disagreement is not a conformance failure, so it heads no root cause unless `strict` counts it."""
    failing = [r for r in records if r.status == "fail" and (strict or not r.disagrees)]
    found = [evidence.get(r.id) or Evidence(r.id, frozenset({r.id}), r.counterexampleOperations
                                            if r.counterexample else None, r.counterexample) for r in failing]
    by_id = {r.id: r for r in failing}
    causes = []
    for cause in group(found, order):
        head = by_id[cause.head]
        for member in [cause.head, *cause.also, *cause.same]:
            by_id[member].rootCause = cause.head
        source = by_id[cause.evidence.invariant]  # whose counterexample it is (the head's, but for ties)
        causes.append(RootCause(head=head.id, adr=head.adr, decision=head.decision, title=head.title,
                                message=source.message, counterexample=source.counterexample,
                                counterexampleOperations=source.counterexampleOperations, alsoViolated=cause.also,
                                sameCause=cause.same))
    return causes
