"""The legacy-warnings corpus (ADR 0104 D2 through the driver): a kernel warns once per
execution and verdict, and remembers the last WARN_MEMORY (execution, verdict) pairs,
forgetting the oldest first."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.script import Define, Load, Resume
from loomcheck.contract.session import Session
from loomcheck.corpora.legacy_scenarios import PAIR, START, events, guarded, record_case, warned
from loomcheck.corpora.result import CorpusResult, gated
from loomcheck.properties.registry import Violation
from loomcheck.spec.names import WARN_MEMORY

WARN_FLOW = {"body": [{"op": "suspend", "on": f"go{i}"} for i in range(1, 6)] + [{"op": "complete"}]}
# The stray passed go1 (a recovery before the first gate), and the execution parked at go2.
PASSED = [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}})]
AT_RISK = [START, *PAIR]  # crashed after an old node's recovery: its next gate will pass with {}


def _warnings_run(session: Session, result: CorpusResult) -> None:
    session.reset()
    session.apply(Define("f", WARN_FLOW))
    session.apply(Load("e0", events(PASSED)))
    session.apply(Resume("e0", "go2", 2))
    session.apply(Resume("e0", "go3", 3))
    record_case(result, "once", _expect(warned(session, "e0"), ["passed"], "legacy.warn-once",
                                  "two resumes of one execution with a passed stray"), session, scripted=False)
    gated(result, lambda: _bounded(session, result))


def _bounded(session: Session, result: CorpusResult) -> None:
    """WARN_MEMORY - 1 other (execution, verdict) pairs: e0's is still remembered. One more: forgotten."""
    for i in range(1, WARN_MEMORY + 1):
        session.unscripted("load", lambda: session.driver.load(f"e{i}", events(AT_RISK), None), needs=("load-log",))
        session.unscripted("recover", lambda: session.driver.recover(f"e{i}"), needs=("recover",))
        if i == WARN_MEMORY - 1:
            session.apply(Resume("e0", "go4", 4))
            record_case(result, "bounded", _expect(warned(session, "e0"), ["passed"], "legacy.warn-memory-bounded",
                                             f"e0 after {i} newer warnings (still remembered)"), session, False)
    others = sum(1 for i in (1, WARN_MEMORY) if warned(session, f"e{i}") == ["at-risk"])
    if others != 2:
        result.violations.append(Violation("legacy.warn-memory-bounded", "a recovered execution with an unspent "
                                           "recovery stray did not warn at-risk exactly once"))
    session.apply(Resume("e0", "go5", 5))
    record_case(result, "bounded", _expect(warned(session, "e0"), ["passed", "passed"], "legacy.warn-memory-bounded",
                                     f"e0 after {WARN_MEMORY} newer warnings (forgotten, FIFO)"), session, False)


def _expect(actual: list[str], wanted: list[str], invariant: str, what: str) -> Iterator[Violation]:
    if actual != wanted:
        yield Violation(invariant, f"{what}: warned {actual}, expected {wanted}.")


run_legacy_warnings = guarded(_warnings_run, "legacy.warn-once")
