"""ADR 0057: each gate gets its own recorded answer, gates past the answers
park, and n gates complete after n answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from loomcheck.contract.script import Load, Recover, Resume, ResumeAs, Start
from loomcheck.contract.session import Step, Trace
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import IN_DOUBT, condition_of, final_moment, migrated, observations, served_answers, walk
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.programs import FlowProgram, StepOp

_NO_FLOW = FlowProgram(body=[])

DRIVES = (Start, Resume, ResumeAs, Recover)


ENTRY_I = "the i-th suspend point a run reaches, in call order, returns entry i of _resumePayloads (ADR 0057)"


@predicate("gate.i-receives-entry-i")
def gate_receives_its_entry(step: Step, trace: Trace) -> Iterator[Violation]:
    snapshot = trace.snapshots.get(step.execution or "")
    log = step.log_after
    moved = migrated(log)
    points = (trace.flow_of(log, step.execution) or _NO_FLOW).suspend_points() if moved else []
    for seen in observations(log[len(step.log_before):]):
        if moved and (seen.gate >= len(points) or isinstance(points[seen.gate], StepOp)):
            # After resumeAs the target's shape decides positions; a human step it reached
            # already completed replays its recorded output, which answered another position.
            continue
        recorded = served_answers(log, snapshot, seen.seq)
        if seen.gate >= len(recorded):
            yield Violation("gate.i-receives-entry-i",
                            f"gate #{seen.gate} ({seen.on!r}) passed with {show(seen.value)} (#{seen.seq}), "
                            f"but only {len(recorded)} answer(s) were recorded before it: it received an answer nobody gave it.",
                            (seen.seq,), ("the gate's observation of what it passed with",),
                            f"gate #{seen.gate} parks until a resume records its answer: " + ENTRY_I)
        elif not json_equal(seen.value, recorded[seen.gate].payload):
            entry = recorded[seen.gate]
            origin = f"#{entry.seq} EXECUTION_RESUMED" if entry.seq else "the snapshot"
            yield Violation("gate.i-receives-entry-i",
                            f"gate #{seen.gate} ({seen.on!r}) received {show(seen.value)} (#{seen.seq}), "
                            f"but entry {seen.gate} is {show(entry.payload)} (recorded by {origin}).",
                            tuple(s for s in (entry.seq, seen.seq) if s),
                            tuple(role for role, s in ((f"it recorded entry {seen.gate}, the answer gate #{seen.gate} is owed",
                                                        entry.seq), ("the gate's observation of what it passed with instead",
                                                                     seen.seq)) if s),
                            f"gate #{seen.gate} passes with entry {seen.gate}, {show(entry.payload, 40)}: " + ENTRY_I)


@dataclass(frozen=True)
class MisplacedPark:
    seq: int
    on: str | None
    index: int                 # answers recorded when it parked: the suspend point that should park
    expected: Any              # that suspend point's op, or None when every suspend point had an answer
    message: str


def misplaced_parks(step: Step, trace: Trace) -> Iterator[MisplacedPark]:
    """Fresh gate parks that are not at the next suspend point in call order."""
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None or migrated(step.log_after):
        return
    points = flow.suspend_points()
    snapshot = trace.snapshots.get(step.execution or "")
    fresh = {e.get("seq") for e in step.log_after[len(step.log_before):]}
    for event, moment, _ in walk(step.log_after, snapshot):
        if event.get("type") != "EXECUTION_SUSPENDED" or event.get("seq") not in fresh:
            continue
        on = condition_of(event).get("on")
        if on == IN_DOUBT:
            continue
        index = moment.entries
        if index >= len(points):
            yield MisplacedPark(event["seq"], on, index, None,
                                f"#{event['seq']} parked on {on!r}, but all {len(points)} suspend point(s) of the flow "
                                f"already had answers ({index} recorded): a suspend point with a recorded answer re-parked.")
        elif on != points[index].on:
            yield MisplacedPark(event["seq"], on, index, points[index],
                                f"#{event['seq']} parked on {on!r}, but with {index} answer(s) recorded the next suspend "
                                f"point to park, in call order, is #{index} {points[index].on!r}.")


@predicate("gate.beyond-answers-parks")
def gate_past_answers_parks(step: Step, trace: Trace) -> Iterator[Violation]:
    for park in misplaced_parks(step, trace):
        should = (f"with {park.index} answer(s) recorded, the re-run passes the first {park.index} suspend point(s) with "
                  f"them and parks at #{park.index} {park.expected.on!r}" if park.expected is not None else
                  "every suspend point has an answer, so the run passes them all and does not park on a gate again")
        yield Violation("gate.beyond-answers-parks", park.message, (park.seq,), ("the park",),
                        f"{should}; {ENTRY_I}")


@predicate("gate.completes-after-n-answers")
def gates_complete_after_n(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, DRIVES) or not step.outcome.ok or step.outcome.crashed:
        return
    flow = trace.flow_of(step.log_after, step.execution)
    if flow is None or migrated(step.log_after):
        return
    n = len(flow.gates())
    snapshot = trace.snapshots.get(step.execution or "")
    now = final_moment(step.log_after, snapshot)
    answers = now.entries
    last = step.log_after[-1]["seq"] if step.log_after else None
    if now.status == "completed" and answers < n:
        # More entries than gates is a pre-0104 stray's doing (ADR 0104 D2), judged by the stray classifier.
        yield Violation("gate.completes-after-n-answers",
                        f"the flow has {n} gate(s) but completed (#{last}) after {answers} answer(s).", (last,) if last else ())
    elif now.status == "suspended" and now.parked_on != IN_DOUBT and answers >= n:
        yield Violation("gate.completes-after-n-answers",
                        f"the flow has {n} gate(s) and {answers} answer(s) are recorded, yet it is parked again on "
                        f"{now.parked_on!r} (#{last}) instead of completing.", (last,) if last else ())
    elif now.status in ("running", "pending"):
        yield Violation("gate.completes-after-n-answers",
                        f"after an accepted {step.op.op} the execution is {now.status}: the run neither parked nor ended.",
                        (last,) if last else ())


@predicate("gate.legacy-single-payload")
def legacy_snapshot_is_one_entry(step: Step, trace: Trace) -> Iterator[Violation]:
    snapshot = trace.snapshots.get(step.execution or "")
    if not snapshot or isinstance(step.op, Load) or not step.outcome.ok:
        return
    variables = snapshot.get("variables") or {}
    if "_resumePayloads" in variables or "_resumePayload" not in variables:
        return
    legacy = variables["_resumePayload"]
    flow = trace.flow_of(step.log_after, step.execution)
    for event in step.log_after[len(step.log_before):]:
        payload = event.get("payload")
        if event.get("type") == "EXECUTION_SUSPENDED" and isinstance(payload, dict) and flow is not None \
                and flow.gates() and isinstance(payload.get("condition"), dict) \
                and payload["condition"].get("on") == flow.gates()[0] and not any(
                    e.get("type") == "EXECUTION_RESUMED" for e in step.log_after[len(step.log_before):]
                    if e.get("seq", 0) < event.get("seq", 0)):
            yield Violation("gate.legacy-single-payload",
                            f"#{event['seq']} re-parked on the first gate {flow.gates()[0]!r}, although the pre-1.16 snapshot "
                            f"answers it with _resumePayload {show(legacy)}.", (event["seq"],))
    for seen in observations(step.log_after[len(step.log_before):]):
        if seen.gate == 0 and not json_equal(seen.value, legacy):
            yield Violation("gate.legacy-single-payload",
                            f"gate #0 received {show(seen.value)} (#{seen.seq}), but the pre-1.16 snapshot's _resumePayload "
                            f"is {show(legacy)}.", (seen.seq,))
