"""The replaying flow context: what a flow's calls do on a run.

A flow re-runs from the top on every resume. The context is built from the
folded state at the start of the run and:
- replays a step whose completion is recorded, runs (and records) one that is not;
- passes the i-th suspend point of the run with the i-th recorded answer
  (ADR 0057), and parks at the first one past the answers;
- appends an emit unless this execution's log already holds that exact fact.
"""

from __future__ import annotations

import json
from typing import Callable

from loomcheck.reference.errors import EmitRefusedError
from loomcheck.reference.events import JSON, Event
from loomcheck.reference.fold import State
from loomcheck.spec.vocabulary import kernel_event_types

Append = Callable[[str, JSON], Event]


class Park(Exception):
    """The run reached a suspend point with no answer left: record the park, stop."""

    def __init__(self, condition: dict[str, JSON]) -> None:
        super().__init__(condition.get("on"))
        self.condition = condition


def fact_key(event_type: str, payload: JSON) -> str:
    return event_type + "\x00" + json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class FlowContext:
    def __init__(self, state: State, events: list[Event], append: Append) -> None:
        self.state = state
        self._append = append
        self._consumed = 0
        self._facts = {fact_key(e.type, e.payload) for e in events}
        self.last_gate: tuple[int, str, JSON] | None = None

    # -- answers ---------------------------------------------------------------
    def answers(self) -> list[JSON]:
        """The ordered answer list. Legacy fallback (ADR 0057): a pre-1.16 snapshot
        folded only `_resumePayload`; it is read as a one-entry list."""
        variables = self.state.variables
        if "_resumePayloads" in variables:
            return variables["_resumePayloads"]
        if "_resumePayload" in variables:
            return [variables["_resumePayload"]]
        return []

    def suspend(self, on: str) -> JSON:
        answers = self.answers()
        index = self._consumed
        if index < len(answers):
            self._consumed += 1
            self.last_gate = (index, on, answers[index])
            return answers[index]
        raise Park({"on": on})

    # -- steps -----------------------------------------------------------------
    def step(self, step_id: str, effect: Callable[[], JSON]) -> JSON:
        frame = self.state.steps.get(step_id)
        if frame is not None and frame.get("status") == "completed":
            return frame.get("output")
        attempt = int(frame.get("attempt") or 0) + 1 if frame else 1
        self._append("STEP_STARTED", {"stepId": step_id, "attempt": attempt})
        output = effect()
        self._append("STEP_COMPLETED", {"stepId": step_id, "output": output})
        return output

    # -- emits -----------------------------------------------------------------
    def emit(self, event_type: str, payload: JSON) -> None:
        if event_type in kernel_event_types():
            # ADR 0104 D1: flow code cannot write kernel state.
            raise EmitRefusedError("kernel-type", f"flow code may not emit the kernel event type {event_type}")
        key = fact_key(event_type, payload)
        if key in self._facts:
            return
        self._append(event_type, payload)
        self._facts.add(key)
