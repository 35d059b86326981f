"""What the checks of a run found for one invariant (its Tally), and the report record that
tally becomes: pass, fail, error, not applicable, or a demonstration's outcome."""

from __future__ import annotations

from dataclasses import dataclass, field

from loomcheck.contract.script import Operation
from loomcheck.properties.explain import Explanation
from loomcheck.reports.model import ExplanationModel, InvariantRecord
from loomcheck.spec.catalogue import Invariant
from loomcheck.spec.regressions import RegressionLog

# A documented hazard or residual is demonstrated, never passed or failed: its kind -> the status it shows.
DEMONSTRATIONS = {"documented-hazard": "hazard", "documented-residual": "residual"}


@dataclass
class Tally:
    """What the checks found for one invariant, before it becomes a record."""

    examples: int = 0
    failure: str | None = None
    examples_to_failure: int | None = None
    counterexample: str | None = None
    events: int | None = None
    operations: int | None = None
    errors: list[str] = field(default_factory=list)
    explanation: Explanation | None = None   # properties/explain.py, for the failure kept
    script: list[Operation] | None = None     # the failure's counterexample, replayed to group root causes
    log: RegressionLog | None = None          # or the committed regression log it came from
    crashes: list[str] = field(default_factory=list)  # driver exceptions in examples that then judged nothing


@dataclass(frozen=True)
class Verdicts:
    """What a run knows besides the tallies when it writes its records."""

    not_applicable: dict[str, str]  # invariant -> why it does not apply (run/applicability.py)
    skipped: dict[str, str]  # invariant -> why some of its cases were skipped (a feature not declared)
    implementation: str  # the implementation's name, as hello gave it
    complete: bool  # the run ran to its end


def record_of(inv: Invariant, tally: Tally, verdicts: Verdicts) -> InvariantRecord:
    """The invariant's record in the report, from what its checks found."""
    record = InvariantRecord(id=inv.id, adr=inv.adr, decision=inv.decision, title=inv.title, kind=inv.kind,
                             statement=inv.statement, checks=list(inv.checks), status="pass",
                             examples=tally.examples, profile=inv.profile)
    if inv.id in verdicts.not_applicable:
        record.status, record.message = "not-applicable", verdicts.not_applicable[inv.id]
    elif inv.kind in DEMONSTRATIONS and not tally.errors and tally.examples:
        # A demonstration: whether the hazard (or residual) shows on this kernel, never a pass or a failure.
        shown = DEMONSTRATIONS[inv.kind]
        record.status = shown if tally.failure is not None else "not-reproduced"
        record.message = tally.failure or f"the demonstration did not show the {shown} on this implementation"
        record.counterexample = tally.counterexample
    elif tally.failure is not None:
        record.status, record.message = "fail", tally.failure
        record.counterexample = tally.counterexample
        record.counterexampleEvents, record.counterexampleOperations = tally.events, tally.operations
        record.examplesToFailure = tally.examples_to_failure
        if tally.explanation is not None:
            record.explanation = ExplanationModel.model_validate(tally.explanation.to_json())
    elif tally.errors:
        record.status, record.message = "error", tally.errors[0]
    elif tally.examples == 0 and inv.id in verdicts.skipped:
        record.status = "not-applicable"
        record.message = f"{verdicts.skipped[inv.id]}, which {verdicts.implementation} does not declare"
    elif tally.examples == 0 and tally.crashes:
        record.status, record.message = "error", f"every check of it met an implementation error: {tally.crashes[0]}"
    elif tally.examples == 0:
        record.status = "error"
        record.message = "no check ran for this invariant" + ("" if verdicts.complete else " (the run stopped early)")
    return record
