"""The reference runtime: start, resume, recover; each checks first and appends
after, so a refusal leaves the log byte-identical.

Recording table (ADR 0104 D1), as far as this kernel has suspend points:
- parked at a gate, answered by a resume naming it: the resume-typed event, then
  EXECUTION_RESUMED(payload) — the payload is that gate's answer;
- crashed (running), re-driven by recovery: EXECUTION_RECOVERED {} only — it
  answers no suspend point, so nothing becomes an entry.
"""

from __future__ import annotations

from typing import Callable, Mapping

from loomcheck.reference.context import FlowContext, Park
from loomcheck.reference.errors import (
    EmitRefusedError,
    FlowDefinitionError,
    InputValidationError,
    KernelRefusal,
    ResumePayloadValidationError,
    ResumeRefusedError,
)
from loomcheck.reference.events import JSON, Event, NotJson, to_plain_json
from loomcheck.reference.fold import HANDLERS, TERMINAL, Handler, State, fold
from loomcheck.reference.interpreter import run_program
from loomcheck.reference.stores.base import EventStore
from loomcheck.spec.parsing import Invalid, parse
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.vocabulary import kernel_event_types

RECOVERED = "EXECUTION_RECOVERED"


class Appender:
    """Appends one event at a time, each guarded by the sequence it expects."""

    def __init__(self, store: EventStore, execution_id: str, next_seq: int) -> None:
        self.store = store
        self.execution_id = execution_id
        self.next_seq = next_seq

    def __call__(self, event_type: str, payload: JSON) -> Event:
        (event,) = self.store.append(self.execution_id, self.next_seq, [(event_type, payload)])
        self.next_seq += 1
        return event


class Runtime:
    def __init__(self, store: EventStore, *, context_class: Callable[..., FlowContext] = FlowContext,
                 handlers: Mapping[str, Handler] = HANDLERS) -> None:
        self.store = store
        self.flows: dict[str, FlowProgram] = {}
        self.context_class = context_class
        self.handlers = handlers

    # -- flows -----------------------------------------------------------------
    def register(self, flow_id: str, program: FlowProgram) -> None:
        self.flows[flow_id] = program

    # -- reading ---------------------------------------------------------------
    def log(self, execution_id: str) -> list[Event]:
        return self.store.read(execution_id)

    def load(self, execution_id: str) -> tuple[State, list[Event]]:
        """The folded state (from the snapshot, if any) and the retained events."""
        snapshot = self.store.get_snapshot(execution_id)
        events = self.store.read(execution_id)
        base = State.from_json(snapshot[1]) if snapshot else None
        if snapshot and base is not None:
            base.sequence = snapshot[0]
        return fold(events, base, self.handlers), events

    def state(self, execution_id: str) -> State:
        return self.load(execution_id)[0]

    def exists(self, execution_id: str) -> bool:
        return self.store.next_seq(execution_id) > 1 or self.store.get_snapshot(execution_id) is not None

    # -- operations ------------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> State:
        try:
            to_plain_json(execution_id)
        except NotJson as exc:
            raise InputValidationError("invalid-input", f"execution id is not storable text: {exc}") from None
        program = self.flows.get(flow_id)
        if program is None:
            raise FlowDefinitionError("unknown-flow", f"no flow registered as {flow_id!r}")
        if self.exists(execution_id):
            raise FlowDefinitionError("duplicate-execution", f"execution {execution_id!r} already exists")
        try:
            value = to_plain_json(input)
        except NotJson as exc:
            raise InputValidationError("invalid-input", f"input is not JSON: {exc}") from None
        if program.validateInput and program.inputSchema is not None:
            parsed = parse(program.inputSchema, value)
            if isinstance(parsed, Invalid):
                raise InputValidationError("invalid-input", f"field {parsed.field}: {parsed.message}")
            value = parsed.value  # ADR 0077: the parsed value is what is recorded
        Appender(self.store, execution_id, 1)("EXECUTION_STARTED", {"flowId": flow_id, "input": value})
        return self.drive(execution_id)

    def resume(self, execution_id: str, event_type: str, payload: JSON) -> State:
        state, _ = self._existing(execution_id)
        self.check_resumable(state, event_type)
        try:
            answer = to_plain_json(payload)
        except NotJson as exc:
            raise ResumePayloadValidationError("invalid-payload", f"payload is not JSON: {exc}") from None
        self.record_answer(execution_id, state, event_type, answer)
        return self.drive(execution_id)

    def check_resumable(self, state: State, event_type: str) -> None:
        """The ingress gate, in order: kernel namespace, parked, the parked gate's name."""
        if event_type in kernel_event_types():
            raise ResumeRefusedError("kernel-namespace", f"{event_type} is a kernel event type")
        parked_on = state.parked_on
        if parked_on is None:
            raise ResumeRefusedError("not-suspended", f"execution is {state.status}, not parked")
        if event_type != parked_on:
            raise ResumeRefusedError("gate-mismatch", f"execution is parked on {parked_on!r}, not {event_type!r}")
        if state.flow_id not in self.flows:
            raise FlowDefinitionError("unknown-flow", f"flow {state.flow_id!r} is not registered here")

    def record_answer(self, execution_id: str, state: State, event_type: str, answer: JSON) -> None:
        # ADR 0104 D1, parked at a gate: the payload IS that gate's answer.
        append = Appender(self.store, execution_id, state.sequence + 1)
        append(event_type, answer)
        append("EXECUTION_RESUMED", answer)

    def recover(self, execution_id: str) -> State:
        state, _ = self._existing(execution_id)
        if state.status == "suspended":
            # ADR 0104 D4: recovery of a parked execution is refused.
            raise ResumeRefusedError("not-suspended", "execution is parked; only a resume naming its gate re-drives it")
        if state.status in TERMINAL:
            raise ResumeRefusedError("terminal", f"execution is {state.status}; nothing to re-drive")
        if state.flow_id not in self.flows:
            raise FlowDefinitionError("unknown-flow", f"flow {state.flow_id!r} is not registered here")
        # ADR 0104 D1, crashed: EXECUTION_RECOVERED {} and nothing else; it answers no gate.
        Appender(self.store, execution_id, state.sequence + 1)(RECOVERED, {})
        return self.drive(execution_id)

    # -- running ---------------------------------------------------------------
    def drive(self, execution_id: str) -> State:
        """Run the flow from the top on the folded state until it parks or ends."""
        state, events = self.load(execution_id)
        program = self.flows[state.flow_id or ""]
        append = Appender(self.store, execution_id, state.sequence + 1)
        ctx = self.context_class(state, events, append)
        try:
            completed = run_program(program, ctx)
        except Park as park:
            append("EXECUTION_SUSPENDED", {"condition": park.condition})
        except EmitRefusedError as refused:
            append("EXECUTION_FAILED", {"error": {"type": refused.error, "reason": refused.reason,
                                                   "message": refused.message}})
        else:
            append("EXECUTION_COMPLETED", {"output": completed.output})
        return self.state(execution_id)

    def _existing(self, execution_id: str) -> tuple[State, list[Event]]:
        if not self.exists(execution_id):
            raise ResumeRefusedError("unknown-execution", f"no execution {execution_id!r}")
        return self.load(execution_id)


__all__ = ["Runtime", "KernelRefusal"]
