"""The crash-faults corpus: the kernel's process killed with SIGKILL at chosen points
(between operations, or at the n-th append inside one), started again on the same
store and recovered; then what the store holds is judged. The cases and what each
judges: docs/corpora.md#crash-faults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from loomcheck.contract.needs import operations_need
from loomcheck.contract.script import Define, Kill, Operation, Recover, RecoverAbandoned, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step
from loomcheck.corpora.result import CorpusResult
from loomcheck.properties.crashes import SURVIVE
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step

COMPLETES = "crash.recovery-completes"
# The kernel model's invariants judged on what the store holds after each kill.
JUDGED = ("log.append-only", "recovery.records-no-answer", "recovery.skips-parked", "gate.i-receives-entry-i",
          "replay.step-runs-once", "fold.state-is-fold-of-log")
MAX_APPENDS = 8      # kill points tried inside one operation; fewer when it answers first
MAX_DRIVE = 12       # operations to drive an execution to its end after a kill


@dataclass(frozen=True)
class Plan:
    """A flow, and the answer each of its gates gets (the names are distinct)."""

    name: str
    body: list[dict[str, Any]]
    answers: dict[str, Any]
    output: Any


PLANS = (
    Plan("two gates between steps",
         [{"op": "step", "id": "a", "output": "A"}, {"op": "suspend", "on": "go1"}, {"op": "observe"},
          {"op": "step", "id": "b", "output": "B"}, {"op": "suspend", "on": "go2"}, {"op": "observe"},
          {"op": "complete", "output": "done"}],
         {"go1": {"approved": 1}, "go2": None}, "done"),
    Plan("a human step, then a gate",
         [{"op": "step", "id": "a", "output": "A"}, {"op": "step", "id": "h", "kind": "human", "on": "review"},
          {"op": "suspend", "on": "go"}, {"op": "observe"}, {"op": "complete", "output": "ok"}],
         {"review": "looks right", "go": 7}, "ok"),
)


def script(plan: Plan) -> list[Operation]:
    gates = [op.get("on") for op in plan.body if op.get("op") == "suspend" or op.get("kind") == "human"]
    return [Define("f", {"body": plan.body}), Start("x", "f", None),
            *(Resume("x", gate, plan.answers[gate]) for gate in gates)]


def plan_needs(plan: Plan) -> set[str]:
    """Its script's features (contract/needs.py), and the recovery every kill is followed by."""
    return operations_need(script(plan)) | {"durable", "recover"}


def kill_points(operations: list[Operation], kill_points_feature: bool) -> Iterator[tuple[int, int | None]]:
    """(index of the operation, append to die at): None is "between", just after it answered."""
    for index in range(1, len(operations)):
        yield index, None
        if kill_points_feature:
            for n in range(1, MAX_APPENDS + 1):
                yield index, n


def run_sigkill(session: Session, invariant_ids: tuple[str, ...], exhaustive: bool = False) -> CorpusResult:
    result = CorpusResult()
    if "durable" not in session.features:
        return result
    judged = tuple(i for i in JUDGED + (SURVIVE, COMPLETES) if i in invariant_ids)
    for plan in PLANS:
        if not plan_needs(plan) <= session.features:
            continue
        operations = script(plan)
        answered_early: set[int] = set()
        for index, appends in kill_points(operations, "kill-points" in session.features):
            if index in answered_early:
                continue  # the operation answered before this append: a later one is the same point
            found, died_inside = _case(session, plan, operations, index, appends, judged)
            if appends and not died_inside:
                answered_early.add(index)
            category = ("between operations" if not appends else "at an append inside an operation" if died_inside
                        else "inside, but it answered first")
            result.cases += 1
            result.per_category[category] = result.per_category.get(category, 0) + 1
            if found and result.operations is None:
                result.operations = session.script()
            result.violations.extend(found)
        if not exhaustive and result.violations:
            break
    return result


def _case(session: Session, plan: Plan, operations: list[Operation], index: int, appends: int | None,
          judged: tuple[str, ...]) -> tuple[list[Violation], bool]:
    found: list[Violation] = []
    where = f"{plan.name}: killed " + (f"at append #{appends} of [{_label(operations[index])}]" if appends
                                        else f"after [{_label(operations[index])}] answered")
    try:
        session.reset()
        for op in operations[:index + (0 if appends else 1)]:
            found += _judge(session, session.apply(op), judged, where)
        kill = Kill(operations[index], appends) if appends else Kill()
        found += _judge(session, session.apply(kill), judged, where)
        found += _judge(session, session.apply(RecoverAbandoned()), judged, where)
        found += _drive(session, plan, judged, where)
    except ImplementationFailed as failed:
        if failed.reason:
            raise  # its process hung, died or broke the protocol: a finding of the run, not a violation
        found.append(Violation(COMPLETES, f"{where}: the implementation failed: {failed}"))
        return found, True
    # The transport knows whether the process died before answering (docs/protocol.md, kill-points).
    return found, bool(appends) and bool(getattr(session.driver, "died_in_flight", True))


def _drive(session: Session, plan: Plan, judged: tuple[str, ...], where: str) -> list[Violation]:
    """Answer whatever the execution is parked on until it ends."""
    found: list[Violation] = []
    for _ in range(MAX_DRIVE):
        state = session.read_state("x")
        status = state.get("status")
        if status in ("completed", "failed", "cancelled"):
            break
        parked = state.get("suspendedOn") if status == "suspended" else None
        if isinstance(parked, dict) and parked.get("on") in plan.answers:
            op: Operation = Resume("x", parked["on"], plan.answers[parked["on"]])
        elif status in ("running", "pending"):
            op = Recover("x")
        else:
            found.append(Violation(COMPLETES, f"{where}: after recovery the execution is {status}, parked on "
                                              f"{parked!r}, which no answer of the script addresses."))
            return found
        found += _judge(session, session.apply(op), judged, where)
    if COMPLETES in judged:
        found += _completed(session, plan, where)
    return found


def _completed(session: Session, plan: Plan, where: str) -> list[Violation]:
    state = session.read_state("x")
    if state.get("status") != "completed" or state.get("output") != plan.output:
        return [Violation(COMPLETES, f"{where}: after recovery and every answer, the execution is "
                                     f"{state.get('status')} with output {state.get('output')!r}, not completed "
                                     f"with {plan.output!r}.")]
    log = session.read_log("x")
    for event in log:
        payload = event.get("payload")
        if event.get("type") == "loomcheck.observed" and isinstance(payload, dict):
            gate = payload.get("on")
            if gate in plan.answers and payload.get("value") != plan.answers[gate]:
                return [Violation(COMPLETES, f"{where}: gate {gate!r} observed {payload.get('value')!r} at "
                                             f"#{event.get('seq')}, but the answer sent to it was "
                                             f"{plan.answers[gate]!r}.", (event.get("seq"),))]
    return []


def _judge(session: Session, step: Step, judged: tuple[str, ...], where: str) -> list[Violation]:
    return [Violation(v.invariant, f"{where}: {v.message}", v.events)
            for v in check_step(step, session.trace, [i for i in judged if i != COMPLETES])]


def _label(op: Operation) -> str:
    from loomcheck.contract.script import describe

    return describe(op)
