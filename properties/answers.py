"""ADR 0104 D1/D3/D4: every entry answers exactly one suspend point; recovery,
verdicts and re-opens record no answer; resumeAs records by the state it finds."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.script import Recover, RecoverAbandoned, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import (
    code_changed,
    answers_gate,
    without_grant,
    IN_DOUBT,
    Moment,
    TERMINAL,
    entries_of,
    final_moment,
    migrated,
    observations,
    served_answers,
    walk,
)
from loomcheck.properties.explain import recording_row, table_row
from loomcheck.properties.registry import Violation, predicate
from loomcheck.properties.steps import fresh, logs_touched
from loomcheck.spec.names import OBSERVED_EVENT
from loomcheck.spec.vocabulary import kernel_event_types


def _records_nothing(status: str | None) -> str:
    """What ADR 0104 D1's table records for an execution in `status` that is parked at no gate."""
    if status in ("completed", "failed", "cancelled"):
        return f"a {status} execution re-opened records EXECUTION_RESUMED(null), no answer"
    return "a crashed or running execution records no answer"


@predicate("answer.one-suspend-point")
def entries_answer_parks(step: Step, trace: Trace) -> Iterator[Violation]:
    for execution, before, after in logs_touched(step):
        first_new = len(before)
        for position, (event, moment, entry) in enumerate(walk(after, trace.snapshots.get(execution))):
            if entry is None or position < first_new:
                continue
            if moment.status == "suspended" and moment.parked_on != IN_DOUBT:
                continue
            cited, roles = _argument(after, position, entry.index, event, moment)
            if moment.status != "suspended":
                yield Violation("answer.one-suspend-point",
                                f"#{event['seq']} EXECUTION_RESUMED {show(event.get('payload'), 40)} became answer entry "
                                f"{entry.index} while the execution was {moment.status}, parked at no gate: the next gate "
                                f"will pass with an answer nobody gave it (ADR 0104 D1: {_records_nothing(moment.status)}).",
                                cited, roles, recording_row(moment))
            else:
                yield Violation("answer.one-suspend-point",
                                f"#{event['seq']} EXECUTION_RESUMED {show(event.get('payload'), 40)} became answer entry "
                                f"{entry.index} at an in-doubt park: a verdict must be a decision plus EXECUTION_RESUMED(null), "
                                f"not an entry the next gate consumes (ADR 0104 D1).", cited, roles, recording_row(moment))
            return


def _argument(log: list[dict], position: int, index: int, event: dict, moment: Moment) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The events that prove an entry answered no suspend point, and what each is: the event
    that left the execution where it was, the EXECUTION_RESUMED that made the entry, and the
    gate that then passed with it, when the log shows one."""
    cited: list[int] = []
    roles: list[str] = []
    if position > 0:
        cited.append(log[position - 1].get("seq"))
        roles.append("the last event before the answer")
    cited.append(event.get("seq"))
    roles.append(f"it became answer entry {index}, the answer to no suspend point")
    consumer = next((e for e in log[position + 1:] if e.get("type") == OBSERVED_EVENT and isinstance(e.get("payload"), dict)
                     and json_equal(e["payload"].get("value"), event.get("payload"))), None)
    if consumer is not None:
        cited.append(consumer.get("seq"))
        roles.append(f"gate {consumer['payload'].get('on')!r} then passed with that entry, an answer nobody gave it")
    return tuple(cited), tuple(roles)


@predicate("answer.addressed-while-parked")
def gates_get_their_own_answers(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.execution is None or migrated(step.log_after):
        return
    snapshot = trace.snapshots.get(step.execution)
    for seen in observations(fresh(step)):
        # Judged by what the gate received: the entries holding that value (its position is
        # gate.i-receives-entry-i's to judge), of which one must have been recorded at its gate.
        served = served_answers(step.log_after, snapshot, seen.seq)
        received = [e for e in served if json_equal(e.payload, seen.value)]
        if not received or any(e.seq is None or e.parked_on == seen.on for e in received):
            continue  # nobody gave it (gate.i-receives-entry-i), a snapshot's entry, or its own answer
        entry = received[0]
        where = f"parked on {entry.parked_on!r}" if entry.parked_on else "parked at no gate"
        yield Violation("answer.addressed-while-parked",
                        f"{seen.on!r} passed (#{seen.seq}) with {show(seen.value, 40)}, the answer #{entry.seq} recorded "
                        f"while the execution was {where}: no resume addressed {seen.on!r} while it was parked.",
                        (entry.seq, seen.seq),
                        (f"it recorded answer entry {entry.index} while the execution was {where}",
                         f"the gate {seen.on!r} passed with that entry"),
                        f"only a resume naming {seen.on!r} while the execution is parked on it records its answer "
                        f"({table_row('parked-at-gate')})")
        return


RECOVERY_ROW = ("EXECUTION_RECOVERED {} and nothing else: the re-driven flow parks at the first gate it has no "
                f"answer for ({table_row('crashed')})")


@predicate("recovery.records-no-answer")
def recovery_records_nothing(step: Step, trace: Trace) -> Iterator[Violation]:
    if not (isinstance(step.op, RecoverAbandoned) or (isinstance(step.op, Recover) and step.outcome.ok)):
        return
    for execution, before, after in logs_touched(step):
        added = after[len(before):]
        if not added:
            continue
        snapshot = trace.snapshots.get(execution)
        # ADR 0104 D1 decides the recovery's event and that it answers nothing; what else its
        # payload carries (a field the kernel adds) folds to nothing either.
        if added[0].get("type") != "EXECUTION_RECOVERED" or not isinstance(added[0].get("payload"), dict):
            yield Violation("recovery.records-no-answer",
                            f"recovering {execution} recorded #{added[0].get('seq')} {added[0].get('type')} "
                            f"{show(added[0].get('payload'), 30)} first, not EXECUTION_RECOVERED {{}}.", (added[0].get("seq"),),
                            ("the first event the recovery appended",), RECOVERY_ROW, execution)
        resumed = [e for e in added if e.get("type") == "EXECUTION_RESUMED"]
        if resumed:
            yield Violation("recovery.records-no-answer",
                            f"recovering {execution} recorded #{resumed[0]['seq']} EXECUTION_RESUMED "
                            f"{show(resumed[0].get('payload'), 30)}: a recovery answers no gate (ADR 0104 D1).",
                            (added[0].get("seq"), resumed[0]["seq"]),
                            ("the recovery's first event", "an answer entry the recovery recorded, for the next gate to pass with"),
                            RECOVERY_ROW, execution)
        elif len(entries_of(after, snapshot)) != len(entries_of(before, snapshot)):
            yield Violation("recovery.records-no-answer", f"recovering {execution} changed the answer list.")


@predicate("recovery.skips-parked")
def recovery_skips_parked(step: Step, trace: Trace) -> Iterator[Violation]:
    if isinstance(step.op, Recover) and (step.log_before or step.execution in trace.snapshots):
        before = final_moment(step.log_before, trace.snapshots.get(step.execution or ""))
        if before.status == "suspended" and step.outcome.reason != "not-suspended":
            yield Violation("recovery.skips-parked",
                            f"recovery of {step.execution}, parked on {before.parked_on!r}, got {step.outcome.short()}, "
                            f"not refused not-suspended (ADR 0104 D4).", tuple(e.get("seq") for e in fresh(step)[:2]))
    if isinstance(step.op, RecoverAbandoned):
        recovered = set(step.recovered or [])
        for execution, before, after in logs_touched(step):
            if not before and execution not in trace.snapshots:
                continue  # never started (its start was refused): nothing to recover
            moment = final_moment(before, trace.snapshots.get(execution))
            if moment.status == "suspended" or moment.status in TERMINAL:
                if after != before or execution in recovered:
                    yield Violation("recovery.skips-parked",
                                    f"recoverAbandoned touched {execution}, which was {moment.status}"
                                    f"{' on ' + repr(moment.parked_on) if moment.parked_on else ''}: it must skip it.",
                                    tuple(e.get("seq") for e in after[len(before):][:2]))
            elif code_changed(trace.registered, before, trace.snapshots.get(execution)):
                if after != before or execution in recovered:  # K11: not on code it is not pinned to
                    yield Violation("recovery.skips-parked",
                                    f"recoverAbandoned re-drove {execution}, whose flow was redeployed since it started: "
                                    f"it must be left for a resumeAs onto the new code.",
                                    tuple(e.get("seq") for e in after[len(before):][:2]))
            elif execution not in recovered:
                yield Violation("recovery.skips-parked",
                                f"recoverAbandoned left {execution} {moment.status} (crashed) without re-driving it.")


@predicate("resumeas.recording-table")
def resume_as_records_by_state(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, ResumeAs) or not (step.log_before or step.execution in trace.snapshots):
        return
    op = step.op
    before = final_moment(step.log_before, trace.snapshots.get(op.execution))
    if op.type in kernel_event_types():
        if step.outcome.reason != "kernel-namespace":
            yield Violation("resumeas.recording-table",
                            f"resumeAs with the kernel type {op.type!r} got {step.outcome.short()}, not refused kernel-namespace.")
        return
    if before.status == "suspended" and not answers_gate(before, op.type):
        if step.outcome.reason != "gate-mismatch":
            yield Violation("resumeas.recording-table",
                            f"resumeAs {op.type!r} onto an execution parked on {before.parked_on!r} got "
                            f"{step.outcome.short()}, not refused gate-mismatch: it must name the RECORDED gate.")
        return
    if not step.outcome.ok:
        return
    added = without_grant(fresh(step))
    kinds = [e.get("type") for e in added]
    if kinds[:2] != ["EXECUTION_MIGRATED", op.type]:
        yield Violation("resumeas.recording-table",
                        f"resumeAs recorded {kinds[:2]}, not EXECUTION_MIGRATED then {op.type!r}.",
                        tuple(e.get("seq") for e in added[:2]))
        return
    third = added[2] if len(added) > 2 else None
    if before.status == "suspended" and before.parked_on != IN_DOUBT:
        from loomcheck.properties.typed import answer_to_record

        answer = answer_to_record(step, trace)
        if third is None or third.get("type") != "EXECUTION_RESUMED" or not json_equal(third.get("payload"), answer):
            yield Violation("resumeas.recording-table",
                            f"resumeAs onto a gate park must record EXECUTION_RESUMED {show(answer, 40)} after "
                            f"{op.type!r}; it recorded {third.get('type') if third else 'nothing'}.",
                            (third.get("seq"),) if third else ())
    elif before.status in ("running", "pending"):
        resumed = [e for e in added if e.get("type") == "EXECUTION_RESUMED"]
        if resumed:
            yield Violation("resumeas.recording-table",
                            f"resumeAs onto a crashed (running) execution recorded #{resumed[0]['seq']} EXECUTION_RESUMED "
                            f"{show(resumed[0].get('payload'), 30)}: it is parked at no gate, so nothing answers one.",
                            (resumed[0]["seq"],))
    elif before.status in TERMINAL:
        if third is None or third.get("type") != "EXECUTION_RESUMED" or third.get("payload") is not None:
            yield Violation("resumeas.recording-table",
                            f"resumeAs onto a {before.status} execution must re-open it with EXECUTION_RESUMED(null); "
                            f"it recorded {third.get('type') + ' ' + show(third.get('payload'), 30) if third else 'nothing'}.",
                            (third.get("seq"),) if third else ())
        elif step.outcome.crashed and final_moment(step.log_after, trace.snapshots.get(op.execution)).status != "running":
            yield Violation("resumeas.recording-table",
                            "the migrated run crashed, but the execution does not read as running, so no recovery "
                            "would find it (ADR 0104: re-opens it, so a later crash is recoverable).")


@predicate("fold.null-resume-status-only", on_load=True)
def null_resume_is_status_only(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.state_after is None:
        return
    status_only = [event for event, moment, _ in walk(step.log_after, trace.snapshots.get(step.execution or ""))
                   if event.get("type") == "EXECUTION_RESUMED" and event.get("payload") is None
                   and (moment.status != "suspended" or moment.parked_on == IN_DOUBT)]
    if not status_only:
        return
    expected = len(entries_of(step.log_after, trace.snapshots.get(step.execution or "")))
    folded = (step.state_after.get("variables") or {}).get("_resumePayloads") or []
    if isinstance(folded, list) and len(folded) != expected:
        yield Violation("fold.null-resume-status-only",
                        f"the log holds {len(status_only)} null EXECUTION_RESUMED answering no suspend point "
                        f"(#{', #'.join(str(e['seq']) for e in status_only[:3])}); the fold must leave the answer list at "
                        f"{expected} entries, and it has {len(folded)} (ADR 0104 D3).", tuple(e["seq"] for e in status_only[:3]))
