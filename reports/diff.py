"""Comparing two reports (`loomcheck diff BASE CANDIDATE`): what a change to a
kernel (or to loomcheck) broke, fixed, or left failing.

Exit codes: 1 when the candidate fails (fail or error) an invariant the base did
not fail; otherwise 2 when the candidate is partial (or unreadable, decided by
the caller); otherwise 0. A violation outranks partiality, as in `run`. In a
partial candidate an error is unknown, not a failure: the run that stopped
early left it unjudged, so only a `fail` there is newly failing."""

from __future__ import annotations

from dataclasses import dataclass, field

from loomcheck.reports.markdown import partial_because
from loomcheck.reports.model import Report

FAILING = ("fail", "error")


@dataclass(frozen=True)
class Change:
    id: str
    before: str | None  # None: not in that report
    after: str | None
    message: str | None = None


@dataclass
class ReportDiff:
    newly_failing: list[Change] = field(default_factory=list)
    fixed: list[Change] = field(default_factory=list)
    still_failing: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)  # any other change of status
    added: list[Change] = field(default_factory=list)  # in the candidate only (a failing one is also newly failing)
    removed: list[Change] = field(default_factory=list)  # in the base only
    unknown: list[Change] = field(default_factory=list)  # errors of a partial candidate: not judged, not failed
    candidate_complete: bool = True
    candidate_partial_because: str | None = None

    def exit_code(self) -> int:
        if self.newly_failing:
            return 1
        if not self.candidate_complete:
            return 2
        return 0


def diff_reports(base: Report, candidate: Report) -> ReportDiff:
    before = {r.id: r for r in base.results}
    after = {r.id: r for r in candidate.results}
    diff = ReportDiff(candidate_complete=candidate.complete,
                      candidate_partial_because=None if candidate.complete else partial_because(candidate))
    for invariant_id, new in after.items():
        old = before.get(invariant_id)
        change = Change(invariant_id, old.status if old else None, new.status, new.message)
        if old is None:
            diff.added.append(change)
        if not candidate.complete and new.status == "error":
            diff.unknown.append(change)
            continue
        if new.status in FAILING and (old is None or old.status not in FAILING):
            # A new profile disagreement (spec/profiles.toml) is a change, not a conformance failure,
            # unless the candidate's run counted it (--profile-checks strict).
            if new.disagrees and candidate.profileChecks != "strict":
                diff.changed.append(change)
                continue
            diff.newly_failing.append(change)
        elif old is None:
            continue
        elif new.status in FAILING:
            diff.still_failing.append(change)
        elif old.status in FAILING:
            diff.fixed.append(change)
        elif old.status != new.status:
            diff.changed.append(change)
    diff.removed = [Change(i, r.status, None) for i, r in before.items() if i not in after]
    return diff


def describe(diff: ReportDiff, base: Report, candidate: Report) -> list[str]:
    """The diff as plain lines, for the terminal."""
    lines = [f"base:      {_who(base)}", f"candidate: {_who(candidate)}"]
    sections = (("newly failing", diff.newly_failing), ("fixed", diff.fixed), ("still failing", diff.still_failing),
                ("status changed", diff.changed), ("added", diff.added), ("removed", diff.removed),
                ("unknown (an error in the partial candidate)", diff.unknown))
    for title, changes in sections:
        if not changes:
            continue
        lines.append(f"{title} ({len(changes)}):")
        for change in changes:
            lines.append(f"  {change.id}: {change.before or 'absent'} -> {change.after or 'absent'}")
            if change.message and title in ("newly failing", "still failing"):
                lines.append(f"      {_short(change.message)}")
    if not any(changes for _, changes in sections):
        lines.append("no invariant changed status")
    if not diff.candidate_complete:
        lines.append(f"the candidate is PARTIAL: {diff.candidate_partial_because}")
    return lines


def _who(report: Report) -> str:
    impl = report.implementation
    return (f"{impl.name} {impl.version} ({impl.spec}), loomcheck {report.suiteVersion}, profile {report.profile}, "
            f"started {report.started}" + ("" if report.complete else ", PARTIAL"))


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

