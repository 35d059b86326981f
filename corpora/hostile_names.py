"""The hostile-names corpus (ADR 0077, "A prototype-chain bug this surfaced"): a string an
outsider controls is only ever looked up as an own key. Through the fold an
unknown type is a no-op; through resume it is refused with a typed reason or
answers the gate that bears that name; nothing crashes."""

from __future__ import annotations

from typing import TypeVar

from loomcheck.fuzz.hostile import ALL, CATEGORIES
from loomcheck.contract.needs import Undeclared
from loomcheck.contract.script import Define, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.properties.folding import differences, observable
from loomcheck.corpora.result import CorpusResult
from loomcheck.properties.key_safety import ID
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step
from loomcheck.spec.vocabulary import kernel_event_types, refusals

T = TypeVar("T")
HOSTILE = frozenset(ALL)


def run_hostile_names(session: Session) -> CorpusResult:
    """Each name three ways: folded as an event type, sent as a resume type at a
    parked gate with another name, and used as a gate's own name and answered."""
    result = CorpusResult()
    kernel = kernel_event_types()
    for category, names in CATEGORIES.items():
        for number, name in enumerate(names):
            if name in kernel:
                continue
            label = f"{category}[{number}]"
            # Scripted cases first, so a failure comes with a replayable script.
            for case in (_resume_case, _gate_case, _op_case, _fold_case):
                try:
                    found = case(session, name, label)
                except Undeclared as undeclared:  # the fold case, on a kernel without feature "fold"
                    result.skip(undeclared)
                    continue
                except ImplementationFailed as failed:  # a process that dies on a name is the bug itself
                    # The invariant is "never crashes": a crash on a hostile name is its violation.
                    found = [Violation(ID, f"{label}: the implementation crashed on the name {name[:40]!r}: {failed}")]
                result.per_category[category] = result.per_category.get(category, 0) + 1
                result.cases += 1
                if found and not result.violations and case is not _fold_case:
                    result.operations = session.script()
                result.violations.extend(found)
    return result


def _fold_case(session: Session, name: str, label: str) -> list[Violation]:
    started = {"seq": 1, "type": "EXECUTION_STARTED", "payload": {"flowId": "f", "input": None}}
    plain = session.fold([started], None)
    hostile = session.fold([started, {"seq": 2, "type": name, "payload": {"x": 1}}], None)
    diff = differences(observable(plain), observable(hostile))
    if diff:
        return [Violation(ID, f"{label}: folding an event of type {name[:40]!r} changed the state ({'; '.join(diff[:2])}); "
                              f"an unknown type must fold as a no-op.", (2,))]
    return []


def _resume_case(session: Session, name: str, label: str) -> list[Violation]:
    session.reset()
    gate = "go" if name != "go" else "stop"
    session.apply(Define("f", {"body": [{"op": "suspend", "on": gate}, {"op": "complete"}]}))
    session.apply(Start("x", "f", None))
    step = session.apply(Resume("x", name, {"approved": True}))
    found = check_step(step, session.trace, (ID, "refusal.append-nothing", "refusal.typed-reason"))
    if step.outcome.ok:
        found.append(Violation(ID, f"{label}: resume with type {name[:40]!r} answered a gate named {gate!r}."))
    return [Violation(v.invariant if v.invariant == ID else ID, f"{label}: {v.message}", v.events) for v in found]


def _op_case(session: Session, name: str, label: str) -> list[Violation]:
    """The name as a program's op: the interpreter's op table is a map indexed by a caller's string
    (ADR 0077, prototype-chain bug), and an op the language lacks makes the program invalid."""
    session.reset()
    defined = session.apply(Define("f", {"body": [{"op": name}, {"op": "complete"}]}))
    if defined.outcome.ok:
        return [Violation(ID, f"{label}: a program with the op {name[:40]!r}, which the flow language lacks, was "
                              f"defined; it must be refused (invalid-program).")]
    if defined.outcome.reason not in refusals().reasons:
        return [Violation(ID, f"{label}: a program with the op {name[:40]!r} was refused with the uncatalogued "
                              f"reason {defined.outcome.reason!r}.")]
    return []


def _gate_case(session: Session, name: str, label: str) -> list[Violation]:
    session.reset()
    program: dict = {"body": [{"op": "suspend", "on": name}, {"op": "observe"}, {"op": "complete"}]}
    if "resume-schemas" in session.features:
        # The name reaches the resumeSchemas map as a key too (ADR 0077: where the bug was found).
        program["resumeSchemas"] = {name: {"type": "object", "properties": {"approved": {"type": "boolean"}}}}
    defined = session.apply(Define("f", program))
    if not defined.outcome.ok:
        # A name no store can write may be refused when the flow is defined, with a typed reason.
        if defined.outcome.reason in refusals().reasons:
            return []
        return [Violation(ID, f"{label}: defining a gate named {name[:40]!r} was refused with the uncatalogued "
                              f"reason {defined.outcome.reason!r}.")]
    session.apply(Start("x", "f", None))
    step = session.apply(Resume("x", name, {"approved": True}))
    if not step.outcome.ok:
        return [Violation(ID, f"{label}: a gate named {name[:40]!r} could not be answered by a resume naming it "
                              f"({step.outcome.reason}: {step.outcome.message[:80]}).")]
    status = (step.state_after or {}).get("status")
    if status != "completed":
        return [Violation(ID, f"{label}: after answering the gate named {name[:40]!r} the execution is {status}, not completed.")]
    return []
