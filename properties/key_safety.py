"""Key safety (ADR 0077, "A prototype-chain bug this surfaced"): a resume whose type is a
string an outsider controls answers only the gate that bears that name, or is refused
with a catalogued reason (the hostile-names corpus, corpora/hostile_names.py, sends them)."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.logview import answers_gate, final_moment
from loomcheck.contract.script import Resume
from loomcheck.contract.session import Step, Trace
from loomcheck.fuzz.hostile import ALL
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.vocabulary import refusals

HOSTILE = frozenset(ALL)
ID = "fold.key-safety"


@predicate(ID)
def hostile_names_are_only_names(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Resume) or step.op.type not in HOSTILE:
        return
    before = final_moment(step.log_before, trace.snapshots.get(step.execution or ""))
    answered_its_gate = answers_gate(before, step.op.type)
    if step.outcome.ok and not answered_its_gate:
        yield Violation(ID, f"resume with the hostile type {step.op.type[:40]!r} was accepted although the execution was "
                            f"{'parked on ' + repr(before.parked_on) if before.parked_on else before.status}.")
    if not step.outcome.ok and step.outcome.reason not in refusals().reasons:
        yield Violation(ID, f"resume with the hostile type {step.op.type[:40]!r} was refused with the uncatalogued "
                            f"reason {step.outcome.reason!r}.")
