"""The bound-answers corpus (ADR 0117 D1): the published view-digest vectors
(spec/vectors/view-digest.json) sent through the driver as gates' views, so a
kernel's own canonical JSON is compared with the spec's on every vector, and the
depth boundary (1024 levels digested, 1025 refused when the flow is defined).

Every vector is one case: define a flow whose gate shows the vector's input,
start it, read the digest it parked with, answer with the digest echoed, and
with a stale one."""

from __future__ import annotations

from typing import Any, Iterator

from loomcheck.contract.script import Define, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.corpora.result import CorpusResult
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step
from loomcheck.spec.canonical import MAX_DEPTH, depth
from loomcheck.spec.files import SPEC_ROOT, read_json
from loomcheck.spec.vocabulary import refusals

DIGESTS = ("approvals.digest-recorded", "approvals.digest-echoed", "approvals.digest-bytes")
DEPTH = "approvals.digest-depth"
STALE = "v2:" + "f" * 64


def nest(kind: str, levels: int, leaf: Any, key: str = "a") -> Any:
    """A value nested `levels` containers deep, built without recursion."""
    value = leaf
    for _ in range(levels):
        value = [value] if kind == "array" else {key: value}
    return value


def view_vectors() -> list[dict[str, Any]]:
    """The published vectors, with generated inputs materialised as "input"."""
    vectors = read_json(SPEC_ROOT / "vectors" / "view-digest.json", "spec/vectors/view-digest.json")["vectors"]
    found = []
    for vector in vectors:
        spec = vector.get("nest")
        value = nest(spec["kind"], spec["depth"], spec["leaf"], spec.get("key", "a")) if spec else vector.get("input")
        found.append({**vector, "input": value})
    return found


def run_bound_answers(session: Session, invariant_ids: tuple[str, ...] = DIGESTS + (DEPTH,)) -> CorpusResult:
    result = CorpusResult()
    cases = [("vectors", v) for v in view_vectors()]
    cases += [("depth", {"description": f"{kind}s nested {levels} deep", "input": nest(kind, levels, 0),
                         **({"refused": "too-deep"} if levels > MAX_DEPTH else {})})
              for kind in ("array", "object") for levels in (MAX_DEPTH, MAX_DEPTH + 1)]
    for category, vector in cases:
        result.cases += 1
        result.per_category[category] = result.per_category.get(category, 0) + 1
        try:
            found = list(_case(session, vector, invariant_ids))
        except ImplementationFailed as failed:  # a process that dies on this input is the bug itself
            found = [Violation(DEPTH if "too-deep" == vector.get("refused") else DIGESTS[0],
                               f"the implementation failed on the view {vector['description']!r}: {failed}")]
        found = [v for v in found if v.invariant in invariant_ids]
        if found and not result.violations and depth(vector["input"]) <= 2 * MAX_DEPTH:
            result.operations = session.script()  # the case alone: each starts from a reset
        result.violations.extend(found)
    return result


def _case(session: Session, vector: dict[str, Any], invariant_ids: tuple[str, ...]) -> Iterator[Violation]:
    session.reset()
    label = vector["description"]
    defined = session.apply(Define("f", {"body": [{"op": "suspend", "on": "approve", "view": vector["input"]},
                                                  {"op": "complete"}]}))
    refused = vector.get("refused")
    invariant = DEPTH if refused == "too-deep" or "nested" in label else DIGESTS[0]
    if refused is not None:
        if defined.outcome.ok:
            yield Violation(invariant, f"{label}: a view canonical JSON refuses ({refused}) was accepted when the flow "
                                       f"was defined; nobody can be shown it, so the gate cannot bind an approval to it.")
        elif defined.outcome.reason not in refusals().reasons:
            yield Violation(invariant, f"{label}: refused with the uncatalogued reason {defined.outcome.reason!r}.")
        return
    if not defined.outcome.ok:
        yield Violation(invariant, f"{label}: a view canonical JSON accepts was refused when the flow was defined "
                                   f"({defined.outcome.reason}: {defined.outcome.message[:80]}).")
        return
    started = session.apply(Start("x", "f", None))
    for violation in check_step(started, session.trace, invariant_ids):
        yield Violation(violation.invariant, f"{label}: {violation.message}", violation.events)
    parked = (started.state_after or {}).get("suspendedOn") or {}
    digest = parked.get("viewDigest")
    if invariant == DEPTH and (started.state_after or {}).get("status") != "suspended":
        yield Violation(DEPTH, f"{label}: the gate showing it did not park (the execution is "
                               f"{(started.state_after or {}).get('status')}).")
    for echoed in (STALE, digest):
        step = session.apply(Resume("x", "approve", {"approved": True, "viewDigest": echoed}))
        for violation in check_step(step, session.trace, invariant_ids):
            yield Violation(violation.invariant, f"{label}: {violation.message}", violation.events)
