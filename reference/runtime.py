"""The reference runtime: start, resume, resumeAs, recover; each checks first and appends
after, so a refusal leaves the log byte-identical. What each records, and the order of a
resume's checks: docs/runtime.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from loomcheck.reference.approvals import parked_at_sequence
from loomcheck.reference.clock import Clock
from loomcheck.reference.context import FlowContext, Park, StepFailed, World, WorkerCrashed
from loomcheck.reference.errors import (
    EmitRefusedError, FlowCodeMismatchError, FlowDefinitionError, InputValidationError, KernelRefusal,
    ResumePayloadValidationError, ResumeRefusedError,
)
from loomcheck.reference.events import JSON, Event, check_text
from loomcheck.reference.fold import HANDLERS, TERMINAL, Handler, State, apply, fold
from loomcheck.reference.ingress import ResumeIngress, bounded, is_kernel_type
from loomcheck.reference.interpreter import run_program
from loomcheck.reference.legacy import LegacyAnswers, ScanCache, Warn, WarnMemory
from loomcheck.reference.limits import MAX_BYTES, MAX_DEPTH
from loomcheck.reference.migration import StateMigration
from loomcheck.reference.security import ResumeOptions, Security
from loomcheck.reference.stores.base import EventStore
from loomcheck.spec.names import TIMER_FIRED
from loomcheck.spec.parsing import Invalid, Parsed, parse
from loomcheck.spec.programs import FlowProgram

RECOVERED = "EXECUTION_RECOVERED"
PARK_WALK = 64  # ADR 0117 Round 2: the walk back to the park reads ranges of this many events


class Appender:
    """Appends one event at a time, each guarded by the sequence it expects."""

    def __init__(self, store: EventStore, execution_id: str, next_seq: int) -> None:
        self.store = store
        self.execution_id = execution_id
        self.next_seq = next_seq
        self.written: list[Event] = []  # what this appender wrote, in order

    def __call__(self, event_type: str, payload: JSON) -> Event:
        (event,) = self.store.append(self.execution_id, self.next_seq, [(event_type, payload)])
        self.next_seq += 1
        self.written.append(event)
        return event


@dataclass(frozen=True)
class Driven:
    """How a run ended: parked, completed, failed, or the worker crashed."""

    state: State
    crashed: bool = False


class Runtime(ResumeIngress, LegacyAnswers, StateMigration):
    """The kernel: its flows (code), its store, and the operations on executions."""

    # The ingress bounds (reference/limits.py, a profile choice); class attributes, a seam for mutants.
    max_depth = MAX_DEPTH
    max_bytes = MAX_BYTES

    def __init__(self, store: EventStore, *, context_class: Callable[..., FlowContext] = FlowContext,
                 handlers: Mapping[str, Handler] = HANDLERS, world: World | None = None,
                 clock: Clock | None = None, security: Security | None = None, on_warn: Warn | None = None) -> None:
        self.store = store
        self.flows: dict[str, FlowProgram] = {}
        self.versions: dict[str, str | None] = {}  # flow id -> the code version registered (K11)
        self.context_class = context_class
        self.handlers = handlers
        self.world = world or World()
        self.clock = clock or Clock()
        self.security = security or Security()
        self.on_warn = on_warn          # ADR 0104 D2: where stray warnings go
        self.warned = WarnMemory()      # once per execution and verdict, FIFO-bounded
        self.scans = ScanCache()        # R1a: clean scanners, fed only what is new

    # -- flows -----------------------------------------------------------------
    def register(self, flow_id: str, program: FlowProgram, version: str | None = None) -> None:
        """Deploy a flow: a new program under a known id is a new code version."""
        self.flows[flow_id] = program  # ADR 0077 D1: resumeSchemas come with the flow, looked up without running it
        self.versions[flow_id] = version

    # -- reading ---------------------------------------------------------------
    def log(self, execution_id: str) -> list[Event]:
        return self.store.read(execution_id)

    def load(self, execution_id: str) -> tuple[State, list[Event]]:
        """The folded state and the events in hand: those after the snapshot, if any."""
        snapshot = self.store.get_snapshot(execution_id)
        events = self.store.read(execution_id, after=snapshot[0] if snapshot else 0)
        base = State.from_json(snapshot[1]) if snapshot else None
        if snapshot and base is not None:
            base.sequence = snapshot[0]
        return fold(events, base, self.handlers), events

    def incarnation(self, execution_id: str) -> int:
        """Which execution under this id it is (1 + the store's erasures of the id): what an approver
        of a re-created execution signs beside its park (spec/signing.md section 10)."""
        return self.store.incarnation(execution_id)

    def parked_at_sequence(self, execution_id: str) -> int | None:
        """The seq of the EXECUTION_SUSPENDED that parked the execution: what an approver signs."""
        state, events = self.load(execution_id)
        return self.locate_park(execution_id, events) if state.status == "suspended" else None

    def locate_park(self, execution_id: str, events: list[Event]) -> int | None:
        """ADR 0117 Round 2: the newest EXECUTION_SUSPENDED among the events in hand, else
        a walk back from the first of them in PARK_WALK-event range reads. Never the
        folded tip (denials and parallel siblings trail the park); None when retention
        removed it."""
        found = parked_at_sequence(events)  # ADR 0117 Round 2: the newest park in hand, else a walk back
        upto = (events[0].seq if events else self.store.next_seq(execution_id)) - 1
        while found is None and upto > 0:
            window = self.store.read(execution_id, after=max(0, upto - PARK_WALK), upto=upto)
            if not window:
                return None  # compacted away
            found = parked_at_sequence(window)
            upto = window[0].seq - 1
        return found

    def truncate_prefix(self, execution_id: str, upto: int) -> None:
        """Retention: keep the folded state as of `upto` as the snapshot, drop the events
        up to it (ADR 0104 D2: the scanner then meets a log whose prefix is gone)."""
        state, _ = self._existing(execution_id)
        if type(upto) is not int or upto < 0 or upto > state.sequence:
            raise InputValidationError("invalid-input", f"cannot truncate up to {upto!r}: the log ends at "
                                                        f"{state.sequence}")
        snapshot = self.store.get_snapshot(execution_id)
        base_seq = snapshot[0] if snapshot else 0
        if upto <= base_seq:
            return  # already retained away
        base = State.from_json(snapshot[1]) if snapshot else None
        if base is not None:
            base.sequence = base_seq
        kept = fold(self.store.read(execution_id, after=base_seq, upto=upto), base, self.handlers)
        self.store.truncate_prefix(execution_id, upto, kept.to_json())

    def state(self, execution_id: str) -> State:
        return self.load(execution_id)[0]

    def exists(self, execution_id: str) -> bool:
        return self.store.next_seq(execution_id) > 1 or self.store.get_snapshot(execution_id) is not None

    # -- operations ------------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Driven:
        bounded(lambda: check_text(execution_id, MAX_BYTES), "the execution id", InputValidationError, "invalid-input",
                "input-too-large")
        program = self.flows.get(flow_id) if type(flow_id) is str else None  # a non-string names no flow
        if program is None:
            raise FlowDefinitionError("unknown-flow", f"no flow registered as {flow_id!r:.80}")
        if self.exists(execution_id):
            raise FlowDefinitionError("duplicate-execution", f"execution {execution_id!r:.80} already exists")
        value = self.ingress(input, "the input", InputValidationError, "invalid-input", "input-too-large")
        parsed = self.input_contract(program, value)
        if isinstance(parsed, Invalid):  # ADR 0077 Context: invalid input is refused before the append
            raise InputValidationError("invalid-input", f"field {parsed.field}: {parsed.message}")
        if parsed is not None:
            value = parsed.value  # ADR 0077 Context: the parsed value is what is recorded
        started: dict[str, JSON] = {"flowId": flow_id, "input": value}
        if self.versions.get(flow_id) is not None:
            started["version"] = self.versions[flow_id]  # ADR 0056 Context: pinned to this code (K11)
        Appender(self.store, execution_id, 1)("EXECUTION_STARTED", started)
        return self.drive(execution_id)

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: ResumeOptions | None = None) -> Driven:
        options = options or ResumeOptions()
        state, events = self._existing(execution_id)
        with self.refusal_drops_scan(execution_id):
            return self._resume(execution_id, state, events, event_type, payload, options)

    def _resume(self, execution_id: str, state: State, events: list[Event], event_type: str, payload: JSON,
                options: ResumeOptions) -> Driven:
        self.check_resumable(state, event_type)
        answer = self._plain_payload(payload, options)
        answer, grant, discard = self.admit(execution_id, state, events, event_type, answer, options,
                                            state.flow_id, pinned=True)
        append = Appender(self.store, execution_id, state.sequence + 1)
        self.record_grant(append, grant)
        self.record_discard(append, discard, grant)
        append(event_type, answer)
        self.record_answer(append, state, answer)
        return self.drive(execution_id, self.advanced(state, events, append))

    def resume_as(self, execution_id: str, target_flow: str, event_type: str, payload: JSON,
                  options: ResumeOptions | None = None) -> Driven:
        """Resume onto another flow, or the new version of its own (new code). Parked:
        every check resume runs, against the RECORDED gate. Crashed or terminal: the
        kernel namespace only. Then the state transform, then the target's input contract."""
        options = options or ResumeOptions()
        state, events = self._existing(execution_id)
        with self.refusal_drops_scan(execution_id):
            return self._resume_as(execution_id, state, events, target_flow, event_type, payload, options)

    def _resume_as(self, execution_id: str, state: State, events: list[Event], target_flow: str, event_type: str,
                   payload: JSON, options: ResumeOptions) -> Driven:
        if is_kernel_type(event_type):  # ADR 0104 D1: the one check of a resumeAs onto an unparked execution
            raise ResumeRefusedError("kernel-namespace", f"{event_type} is a kernel event type")
        self._require_flow(target_flow)
        answer = self._plain_payload(payload, options)
        grant = None
        if state.status != "suspended":  # nothing is parked, so the type is recorded as given
            bounded(lambda: check_text(event_type, MAX_BYTES), "the event type", ResumePayloadValidationError,
                    "invalid-payload", "payload-too-large")
        if state.status == "suspended":  # ADR 0104 D1: parked, it runs every check resume runs
            self.check_resumable(state, event_type)
            # ADR 0077 D4: the TARGET flow's declared shape, before EXECUTION_MIGRATED. ADR 0104 Context: no code
            # check (it is not pinned), so a resumeAs is the exit from changed code.
            answer, grant, discard = self.admit(execution_id, state, events, event_type, answer, options,
                                                target_flow, operation={"type": "resumeAs", "flowId": target_flow,
                                                                        "transformState": options.transform_state})
        else:
            # ADR 0104 D2: nothing is parked; a re-open of a terminal execution is judged as live.
            discard = self.scan_legacy(execution_id, target_flow, options, None, event_type,
                                       live=state.status in TERMINAL)
        migrated = self.migrate_state(state, target_flow, options.transform_state)
        append = Appender(self.store, execution_id, state.sequence + 1)
        append("EXECUTION_MIGRATED", self.migration_record(state, target_flow, options.transform_state, migrated))
        self.record_grant(append, grant)
        self.record_discard(append, discard, grant)
        append(event_type, answer)
        if state.status == "suspended":
            self.record_answer(append, state, answer)
        elif state.status in TERMINAL:
            # ADR 0104 D1: re-opens it, so a later crash is recoverable, without answering a gate.
            append("EXECUTION_RESUMED", None)
        return self.drive(execution_id, self.advanced(state, events, append))

    @staticmethod
    def input_contract(program: FlowProgram, value: JSON) -> Parsed | Invalid | None:
        """The flow's declared input contract applied to an input it would run with;
        None when it validates no input (ADR 0077 Context)."""
        if not program.validateInput or program.inputSchema is None:
            return None
        return parse(program.inputSchema, value)

    def recover(self, execution_id: str) -> Driven:
        state, events = self._existing(execution_id)
        with self.refusal_drops_scan(execution_id):
            return self._recover(execution_id, state, events)

    def _recover(self, execution_id: str, state: State, events: list[Event]) -> Driven:
        if state.status == "suspended":
            # ADR 0104 D4: recovery of a parked execution is refused.
            raise ResumeRefusedError("not-suspended", "execution is parked; only a resume naming its gate re-drives it")
        if state.status in TERMINAL:
            raise ResumeRefusedError("terminal", f"execution is {state.status}; nothing to re-drive")
        self._require_flow(state.flow_id)
        self.check_code(state)
        self.scan_legacy(execution_id, state.flow_id, None, None, None)  # ADR 0104 D2: recovery included
        # ADR 0104 D1, crashed: EXECUTION_RECOVERED {} and nothing else; it answers no gate.
        append = Appender(self.store, execution_id, state.sequence + 1)
        append(RECOVERED, {})
        return self.drive(execution_id, self.advanced(state, events, append))

    def recover_abandoned(self) -> list[str]:
        """Re-drive every crashed execution; parked and finished ones are skipped."""
        recovered = []
        for execution_id in self.store.executions():
            state = self.state(execution_id)
            # ADR 0104 D4: parked executions are skipped, as are finished ones.
            if state.status in ("running", "pending") and state.flow_id in self.flows:
                try:
                    self.recover(execution_id)
                except FlowCodeMismatchError:
                    continue  # ADR 0104 Context: pinned to code this runtime no longer has; resumeAs is the exit
                except ResumeRefusedError as refused:
                    if refused.reason != "ambiguous-legacy-answers":
                        raise
                    continue  # ADR 0104 D2: an operator resolves it; nothing was appended
                recovered.append(execution_id)
        return recovered

    def fire_timers(self) -> list[str]:
        """The timer service: wake every execution whose timed park is due, with the
        runtime's system grant (ADR 0117 D5). The ids woken, in store order."""
        woken = []
        for execution_id in self.store.executions():
            state = self.state(execution_id)
            wake_at = (state.suspended_on or {}).get("wakeAt") if state.status == "suspended" else None
            if type(wake_at) is int and wake_at <= self.clock.now() and state.flow_id in self.flows:
                try:
                    self.resume(execution_id, TIMER_FIRED, None, ResumeOptions(system=True))  # ADR 0117 D5
                except KernelRefusal:
                    continue
                woken.append(execution_id)
        return woken

    # -- running ---------------------------------------------------------------
    def drive(self, execution_id: str, loaded: tuple[State, list[Event]] | None = None) -> Driven:
        """Run the flow from the top on the folded state until it parks, ends or crashes.
        `loaded` is the state and events the operation already holds, so the log is read once."""
        state, events = loaded if loaded is not None else self.load(execution_id)
        program = self.flows[state.flow_id or ""]
        append = Appender(self.store, execution_id, state.sequence + 1)
        ctx = self.context_class(state, events, append, self.world, execution_id)
        ctx.now = self.clock.now()
        try:
            completed = run_program(program, ctx)
        except Park as park:
            append("EXECUTION_SUSPENDED", {"condition": park.condition})
        except WorkerCrashed:
            return Driven(self.advanced(state, events, append)[0], crashed=True)
        except StepFailed as failed:
            append("EXECUTION_FAILED", {"error": {"stepId": failed.step_id, **failed.error}})
        except EmitRefusedError as refused:
            append("EXECUTION_FAILED", {"error": {"type": refused.error, "reason": refused.reason,
                                                   "message": refused.message}})
        else:
            append("EXECUTION_COMPLETED", {"output": completed.output})
        return Driven(self.advanced(state, events, append)[0])

    def advanced(self, state: State, events: list[Event], append: Appender) -> tuple[State, list[Event]]:
        """`state` and `events` moved past what `append` wrote, in place, without reading the
        log again. Exact: each append was guarded by the sequence right after `state`, so the
        log is `events` followed by what was written (the fold cut in two, as R1a's scan is)."""
        for event in append.written:
            apply(state, event, self.handlers)
        events.extend(append.written)
        return state, events

    # -- helpers -----------------------------------------------------------------
    def _existing(self, execution_id: str) -> tuple[State, list[Event]]:
        # An id that is not storable text names no execution (start refuses it), whatever its type.
        if not self.exists(execution_id):
            raise ResumeRefusedError("unknown-execution", f"no execution {execution_id!r:.80}")
        return self.load(execution_id)

    def _require_flow(self, flow_id: str | None) -> None:
        if type(flow_id) is not str or flow_id not in self.flows:
            raise FlowDefinitionError("unknown-flow", f"flow {flow_id!r:.80} is not registered here")


__all__ = ["Appender", "Driven", "Runtime"]
