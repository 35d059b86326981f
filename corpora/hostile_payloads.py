"""No input makes an execution unreadable (ADR 0077 Context: "a resume payload cannot be
rejected retroactively. Once appended it is a permanent fold input."). Each hostile value of
fuzz/hostile.py's `payloads()` (nested thousands deep, megabytes long, keyed by prototype and
dunder names) is sent as a start's input and as a resume's payload. The kernel may refuse it,
with a typed reason and nothing appended, or take it; taken, the execution's log and state must
still read and the execution go on (a resume after the start). How deep or how long a kernel
takes is its own choice (the reference's: spec/profiles.toml, ingress-limits): no case requires
a refusal or an acceptance."""

from __future__ import annotations

from loomcheck.fuzz.hostile import payloads
from loomcheck.contract.script import Define, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step
from loomcheck.corpora.result import CorpusResult
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step

ID = "log.stays-readable"
GATE = {"body": [{"op": "suspend", "on": "go"}, {"op": "complete", "output": "done"}]}
ANSWER = {"approved": True}
REFUSALS = ("refusal.append-nothing", "refusal.typed-reason")


def run_hostile_payloads(session: Session) -> CorpusResult:
    result = CorpusResult()
    for category, label, value in payloads():
        for where in ("start", "resume"):
            found = _case(session, where, value, f"{category}: {label}, as the {where}'s "
                                                 f"{'input' if where == 'start' else 'payload'}")
            result.per_category[category] = result.per_category.get(category, 0) + 1
            result.cases += 1
            if found and not result.violations:
                result.operations = session.script()
            result.violations.extend(found)
    return result


def _case(session: Session, where: str, value: object, label: str) -> list[Violation]:
    try:
        session.reset()
        session.apply(Define("f", GATE))
        if where == "resume":
            session.apply(Start("x", "f", None))
        step = session.apply(Start("x", "f", value) if where == "start" else Resume("x", "go", value))
        found = _judged(step, session, label)
        if not found and step.outcome.ok and where == "start":
            # Taken: the execution goes on. A kernel broken by what it appended fails right here.
            session.apply(Resume("x", "go", ANSWER))
        return found
    except ImplementationFailed as failed:
        return [Violation(ID, f"{label}: the implementation failed ({failed}); a kernel may refuse such a value "
                              f"before the append, or take it, but what it took must leave the execution readable.",
                          expected="refused with a typed reason and nothing appended, or accepted and still readable")]


def _judged(step: Step, session: Session, label: str) -> list[Violation]:
    """A refusal is typed and appends nothing; an acceptance was read back (Session.apply read the
    log and the state after it, and would have raised had either failed)."""
    if step.outcome.ok:
        return []
    return [Violation(ID, f"{label}: {v.message}", v.events, v.roles, v.expected, v.execution)
            for v in check_step(step, session.trace, REFUSALS)]
