"""Real crash faults (the crash corpus, corpora/crash_faults.py, kills the kernel's process):
every event acknowledged before a kill is still there after the restart, unchanged."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.script import Kill
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.registry import Violation, predicate

SURVIVE = "crash.acknowledged-events-survive"


@predicate(SURVIVE)
def acknowledged_events_survive(step: Step, trace: Trace) -> Iterator[Violation]:
    """Every event acknowledged before a kill is still there after it, unchanged."""
    if not isinstance(step.op, Kill):
        return
    for execution, (before, after) in (step.others or {}).items():
        for event in before:
            seq = event.get("seq")
            kept = next((e for e in after if e.get("seq") == seq), None)
            if kept != event:
                yield Violation(SURVIVE, f"{execution}'s event #{seq} {event.get('type')} was acknowledged "
                                         f"before the kill and is {'gone' if kept is None else f'now {kept}'} after "
                                         f"the restart.", (seq,) if isinstance(seq, int) else ())
                return
