"""The log only grows, and recorded steps replay instead of running again."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.session import Step, Trace
from loomcheck.properties.registry import Violation, predicate


@predicate("log.append-only")
def log_only_grows(step: Step, trace: Trace) -> Iterator[Violation]:
    before, after = step.log_before, step.log_after
    if after[:len(before)] != before:
        first = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b), min(len(before), len(after)))
        seq = before[first].get("seq") if first < len(before) else None
        yield Violation("log.append-only",
                        f"{step.op.op} rewrote the log: event #{seq} was {before[first] if first < len(before) else 'present'} "
                        f"and is now {after[first] if first < len(after) else 'gone'}.", (seq,) if seq else ())
        return
    snapshot = trace.snapshots.get(step.execution or "")
    expected = int(snapshot.get("sequence") or 0) + 1 if snapshot else 1
    for event in after:
        if event.get("seq") != expected:
            yield Violation("log.append-only",
                            f"sequences must be contiguous: expected #{expected}, found #{event.get('seq')} {event.get('type')}.",
                            (event.get("seq"),))
            return
        expected += 1


@predicate("replay.step-runs-once")
def recorded_steps_replay(step: Step, trace: Trace) -> Iterator[Violation]:
    completed: dict[str, int] = {}
    for event in step.log_after:
        payload = event.get("payload")
        step_id = payload.get("stepId") if isinstance(payload, dict) else None
        if not isinstance(step_id, str):
            continue
        if event.get("type") == "STEP_STARTED" and step_id in completed:
            yield Violation("replay.step-runs-once",
                            f"step {step_id!r} completed at #{completed[step_id]} but started again at #{event['seq']}: "
                            f"a recorded step was re-executed instead of replayed.", (completed[step_id], event["seq"]))
            return
        if event.get("type") == "STEP_COMPLETED":
            if step_id in completed:
                yield Violation("replay.step-runs-once",
                                f"step {step_id!r} completed twice (#{completed[step_id]} and #{event['seq']}).",
                                (completed[step_id], event["seq"]))
                return
            completed[step_id] = event["seq"]
