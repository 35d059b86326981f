"""ADR 0104 D1: a human step is a suspend point that completes with its answer;
its park carries the kernel-set stepId; suspend points in one parallel park
one at a time in call order."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.script import Resume
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.steps import fresh
from loomcheck.properties.gates import misplaced_parks
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import IN_DOUBT, condition_of, entries_of, migrated, observations, served_answers
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.programs import ParallelOp, StepOp, SuspendOp


def _human_steps(step: Step, trace: Trace) -> dict[str, StepOp]:
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None or migrated(step.log_after):
        return {}
    return {op.id: op for op in flow.calls() if isinstance(op, StepOp) and op.kind == "human"}


@predicate("human.completes-with-answer")
def human_steps_complete(step: Step, trace: Trace) -> Iterator[Violation]:
    humans = _human_steps(step, trace)
    if not humans:
        return
    entries = entries_of(step.log_after, trace.snapshots.get(step.execution or ""))
    added = fresh(step)
    for step_id in humans:
        answer = next((e for e in entries if e.parked_step == step_id and e.parked_on == humans[step_id].on), None)
        if answer is None:
            continue
        for event in step.log_after:
            payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
            if event.get("type") == "STEP_COMPLETED" and payload.get("stepId") == step_id \
                    and not json_equal(payload.get("output"), answer.payload):
                yield Violation("human.completes-with-answer",
                                f"human step {step_id!r} completed at #{event['seq']} with {show(payload.get('output'), 40)}, "
                                f"but its answer is {show(answer.payload, 40)} (#{answer.seq}).", (answer.seq, event["seq"]))
                return
        reparked = [e for e in added if e.get("type") == "EXECUTION_SUSPENDED" and e.get("seq", 0) > (answer.seq or 0)
                    and condition_of(e).get("stepId") == step_id]
        if reparked:
            yield Violation("human.completes-with-answer",
                            f"human step {step_id!r} was answered at #{answer.seq} ({show(answer.payload, 40)}) but parked "
                            f"again at #{reparked[0]['seq']}: it must complete with its answer, not re-park forever.",
                            (answer.seq, reparked[0]["seq"]))
            return
        answered_now = answer.seq in {e.get("seq") for e in added}
        if answered_now and isinstance(step.op, Resume) and step.outcome.ok and not step.outcome.crashed:
            done = any(e.get("type") == "STEP_COMPLETED" and (e.get("payload") or {}).get("stepId") == step_id
                       for e in added)
            if not done:
                yield Violation("human.completes-with-answer",
                                f"human step {step_id!r} was answered at #{answer.seq}, and the run that followed did not "
                                f"complete it.", (answer.seq,))


def _parks(step: Step, trace: Trace) -> Iterator[tuple[dict, str | None, object, dict[str, StepOp], set[str], set[str]]]:
    """Each park this operation appended, with its condition's on and stepId and the flow's
    human steps, ctx.suspend names and non-idempotent steps (flows never migrated only)."""
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None or migrated(step.log_after):
        return
    humans = _human_steps(step, trace)
    suspend_names = {op.on for op in flow.calls() if isinstance(op, SuspendOp)}
    non_idempotent = {op.id for op in flow.calls() if isinstance(op, StepOp) and op.kind == "non-idempotent"}
    for event in fresh(step):
        if event.get("type") == "EXECUTION_SUSPENDED":
            cond = condition_of(event)
            yield event, cond.get("on"), cond.get("stepId"), humans, suspend_names, non_idempotent


@predicate("human.park-carries-step-id")
def human_parks_name_their_step(step: Step, trace: Trace) -> Iterator[Violation]:
    for event, on, step_id, humans, suspend_names, _ in _parks(step, trace):
        if step_id is None and on in {h.on for h in humans.values()} and on not in suspend_names:
            yield Violation("human.park-carries-step-id",
                            f"#{event['seq']} is a human step's park on {on!r} without the kernel-set stepId.",
                            (event["seq"],), ("the human step's park",),
                            "the kernel records condition.stepId, the parked human step's id, in its park (ADR 0104 D2)")
            return


@predicate("human.caller-step-id-stripped")
def caller_step_ids_are_stripped(step: Step, trace: Trace) -> Iterator[Violation]:
    for event, on, step_id, humans, _, non_idempotent in _parks(step, trace):
        if step_id is None:
            continue
        owner = humans.get(step_id) if isinstance(step_id, str) else None
        if not ((owner is not None and owner.on == on) or (on == IN_DOUBT and step_id in non_idempotent)):
            yield Violation("human.caller-step-id-stripped",
                            f"#{event['seq']} parked on {on!r} with stepId {show(step_id, 30)}, which is not a human "
                            f"step parking there: only the kernel sets stepId, and ctx.suspend strips a caller's.",
                            (event["seq"],), ("a park naming a step the kernel did not park",),
                            "ctx.suspend strips a caller-supplied stepId, so only the kernel can set it (ADR 0104 D2)")
            return


@predicate("parallel.call-order")
def parallel_parks_in_call_order(step: Step, trace: Trace) -> Iterator[Violation]:
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None:
        return
    in_parallel = [id(b) for op in flow.body if isinstance(op, ParallelOp) for b in op.branches]
    if not in_parallel:
        return
    points = flow.suspend_points()
    for park in misplaced_parks(step, trace):
        inside = park.expected is not None and id(park.expected) in in_parallel
        if inside or (park.index < len(points) and id(points[park.index]) in in_parallel):
            yield Violation("parallel.call-order", park.message + " Suspend points in one parallel park in call order.",
                            (park.seq,))
            return


@predicate("hazard.mixed-parallel")
def mixed_parallel_hazard(step: Step, trace: Trace) -> Iterator[Violation]:
    """A demonstration, not a rule: reports when a ctx.suspend that shares a
    parallel with a human step passes with the answer given to the human step's park."""
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None or migrated(step.log_after):
        return
    mixed = {b.on for op in flow.body if isinstance(op, ParallelOp)
             if any(isinstance(b, StepOp) and b.kind == "human" for b in op.branches)
             for b in op.branches if isinstance(b, SuspendOp)}
    if not mixed:
        return
    snapshot = trace.snapshots.get(step.execution or "")
    for seen in observations(fresh(step)):
        served = served_answers(step.log_after, snapshot, seen.seq)
        if seen.on in mixed and seen.gate < len(served) and served[seen.gate].parked_step is not None:
            entry = served[seen.gate]
            yield Violation("hazard.mixed-parallel",
                            f"the ctx.suspend {seen.on!r} passed (#{seen.seq}) with {show(entry.payload, 40)}, the answer "
                            f"#{entry.seq} gave to the park of human step {entry.parked_step!r}: the hazard ADR 0104 documents.",
                            (entry.seq, seen.seq))
            return
