"""Legacy logs built by hand, as an older node of the fleet wrote them, and what the
corpora that load them share (ADR 0104 D2 and R1a through the driver): the operator's
override (legacy_override.py), the warning memory (legacy_warnings.py), the warm scan
(warm_scan.py) and the fleet's legacy logs (legacy_logs.py). Each judges what the
kernel does with them against spec/legacy-logs.md."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.contract.shown import brief
from loomcheck.corpora.result import CorpusResult
from loomcheck.properties.registry import Violation

ACTOR, SECRET = "operator", "operator-approver-secret-01"
HUMAN = "HumanInput"
START = ("EXECUTION_STARTED", {"flowId": "f", "input": None})
PAIR = [("EXECUTION_RECOVERED", {}), ("EXECUTION_RESUMED", {})]  # what a pre-0104 recovery wrote
OLD_PARK = ("EXECUTION_SUSPENDED", {"condition": {"on": HUMAN}})  # a pre-0104 human park: no stepId
NEW_PARK = ("EXECUTION_SUSPENDED", {"condition": {"on": HUMAN, "stepId": "h"}})
FLOW = {"body": [{"op": "suspend", "on": "go1"}, {"op": "observe"}, {"op": "step", "id": "h", "kind": "human"},
                 {"op": "observe"}, {"op": "suspend", "on": "go2"}, {"op": "observe"}, {"op": "complete"}]}

# A stray before the human step's first start (a recovery pair an old node wrote, which
# go1 then passed with), then the new kernel started the step and parked at it: D2's
# second shape, and the known false positive (a gate passthrough consumed the stray).
STRAY_FIRST = [START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1}), NEW_PARK]
# An old node's human step: parked, answered, re-ran its effect and parked again (D2's first shape).
REPARKED = [START, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}}), ("go1", "g1"), ("EXECUTION_RESUMED", "g1"),
            ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK, (HUMAN, "old"), ("EXECUTION_RESUMED", "old"),
            ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK]


def events(pairs: list[tuple[str, Any]], first: int = 1) -> list[dict[str, Any]]:
    return [{"seq": first + i, "type": t, "payload": p} for i, (t, p) in enumerate(pairs)]


def guarded(run: Callable[[Session, CorpusResult], None], fallback: str) -> Callable[..., CorpusResult]:
    def corpus(session: Session, invariant_ids: tuple[str, ...]) -> CorpusResult:
        result = CorpusResult()
        try:
            run(session, result)
        except ImplementationFailed as failed:
            if failed.reason:
                raise  # its process hung, died or broke the protocol: a finding of the run, not a violation
            result.violations.append(Violation(fallback, f"the implementation failed: {failed}"))
        result.violations = [v for v in result.violations if v.invariant in invariant_ids]
        return result
    return corpus


def record_case(result: CorpusResult, category: str, found: Iterator[Violation], session: Session,
          scripted: bool = True) -> None:
    """One case. `scripted`: the session's script alone reproduces it. Cases that also
    append as another node, truncate, erase or read warnings are not (yet) scripts, so
    their failures come with the corpus's description instead of a counterexample file."""
    violations = list(found)  # first: a case that reaches an undeclared feature is skipped, not counted
    result.cases += 1
    result.per_category[category] = result.per_category.get(category, 0) + 1
    if violations and result.operations is None and scripted:
        result.operations = session.script()
    result.violations.extend(violations)


def warned(session: Session, execution: str) -> list[str]:
    said = session.unscripted("warnings", lambda: session.driver.warnings(), needs=("legacy-scan",), data=True)
    if not isinstance(said, list) or not all(isinstance(w, dict) for w in said):
        raise ImplementationFailed("warnings", f"returned {brief(said)}, not a list of objects")
    return [str(w.get("verdict")) for w in said if w.get("executionId") == execution]
