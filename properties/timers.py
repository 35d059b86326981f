"""ADR 0117 D5: timers. A timer's wake is the kernel's own resume, recorded as TIMER_FIRED
and EXECUTION_RESUMED carrying only the parked wakeAt; a caller may not send one under
strict; a due timer wakes its execution when the clock passes, on the code it is pinned to."""

from __future__ import annotations

from typing import Any, Iterator

from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import code_changed, final_moment, park_seq, timer_wake, without_grant
from loomcheck.contract.script import AdvanceClock, Resume, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.approvals import moment_before
from loomcheck.properties.registry import Violation, predicate
from loomcheck.properties.steps import fresh, logs_touched
from loomcheck.spec.names import TIMER_FIRED


def _timer_records(execution: str, before_log: list[dict], after_log: list[dict], wake_at: Any,
                   skip_migration: bool) -> Iterator[Violation]:
    added = without_grant(after_log[len(before_log):])
    if skip_migration and added and added[0].get("type") == "EXECUTION_MIGRATED":
        added = added[1:]
    expected = {"wakeAt": wake_at}
    kinds = [e.get("type") for e in added[:2]]
    if kinds != [TIMER_FIRED, "EXECUTION_RESUMED"] or not all(json_equal(e.get("payload"), expected) for e in added[:2]):
        shown = ", ".join(f"#{e.get('seq')} {e.get('type')} {show(e.get('payload'), 40)}" for e in added[:2])
        yield Violation("approvals.timer-normalised",
                        f"the timer's wake of {execution} must be recorded as TIMER_FIRED then EXECUTION_RESUMED, both "
                        f"exactly {show(expected)} from the parked condition; the log recorded {shown or 'nothing'}.",
                        tuple(e.get("seq") for e in added[:2]))


@predicate("approvals.timer-normalised")
def timer_wakes_carry_only_wake_at(step: Step, trace: Trace) -> Iterator[Violation]:
    op = step.op
    if isinstance(op, AdvanceClock):
        for execution, before_log, after_log in logs_touched(step):
            if len(after_log) > len(before_log):
                moment = final_moment(before_log, trace.snapshots.get(execution))
                if moment.status == "suspended" and "wakeAt" in (moment.condition or {}):
                    yield from _timer_records(execution, before_log, after_log, moment.condition["wakeAt"], False)
        return
    if not isinstance(op, (Resume, ResumeAs)) or not step.outcome.ok or not step.log_before:
        return
    before = moment_before(step, trace)
    if timer_wake(before, op.type):
        yield from _timer_records(op.execution, step.log_before, step.log_after, before.condition["wakeAt"],
                                  isinstance(op, ResumeAs))


@predicate("approvals.timer-system-only")
def callers_do_not_wake_timers_under_strict(step: Step, trace: Trace) -> Iterator[Violation]:
    op = step.op
    if not isinstance(op, (Resume, ResumeAs)) or trace.security.get("strict") is not True or not step.log_before:
        return
    if timer_wake(moment_before(step, trace), op.type) and step.outcome.reason != "timer-wake-not-system":
        yield Violation("approvals.timer-system-only",
                        f"on a strict runtime a caller's TIMER_FIRED {show(op.payload, 40)} got {step.outcome.short()}, "
                        f"not refused timer-wake-not-system (ADR 0117 D5).", tuple(e.get("seq") for e in fresh(step)[:3]))


@predicate("approvals.timer-fires")
def due_timers_wake(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, AdvanceClock):
        return
    for execution, before_log, after_log in logs_touched(step):
        moment = final_moment(before_log, trace.snapshots.get(execution))
        wake_at = (moment.condition or {}).get("wakeAt") if moment.status == "suspended" else None
        due = type(wake_at) is int and wake_at <= trace.now and trace.flow_of(before_log, execution) is not None
        added = after_log[len(before_log):]
        if due and code_changed(trace.registered, before_log, trace.snapshots.get(execution)):
            if added:  # K11: the timer service may not run it on code it is not pinned to
                yield Violation("approvals.timer-fires",
                                f"{execution} is pinned to code its flow no longer has (redeployed), yet its timer woke "
                                f"it: #{added[0].get('seq')} {added[0].get('type')}.", (added[0].get("seq"),))
            continue
        if due and (not added or added[0].get("type") != TIMER_FIRED):
            parked = park_seq(before_log)
            yield Violation("approvals.timer-fires",
                            f"{execution} was parked on {moment.parked_on!r} until {wake_at}; the clock reads {trace.now}, "
                            f"and its timer did not wake it (its log " +
                            (f"gained #{added[0].get('seq')} {added[0].get('type')}" if added else "is unchanged") + ").",
                            (parked,) if parked else (), (f"the park whose wakeAt {wake_at} the clock ({trace.now}) has "
                                                          "passed: its timer is due",),
                            f"TIMER_FIRED {{wakeAt: {wake_at}}} appended when the clock passes wakeAt (ADR 0117 D5)",
                            execution)
            return
        if not due and added:
            yield Violation("approvals.timer-fires",
                            f"{execution} was not due (parked on {moment.parked_on!r}, wakeAt {wake_at}, clock "
                            f"{trace.now}), yet advancing the clock appended #{added[0].get('seq')} {added[0].get('type')}.",
                            (added[0].get("seq"),))
            return
