"""The reference runtime: start, resume, resumeAs, recover; each checks first
and appends after, so a refusal leaves the log byte-identical.

Beside the resume-typed event, resume() and resumeAs() record (ADR 0104 D1):

| the execution was...                 | recorded                                              |
| parked at a gate (suspend or human)  | EXECUTION_RESUMED(payload): the payload IS the answer |
| parked in doubt                      | DECISION_RECORDED {__loom_indoubt__:<step>:<attempt>, |
|                                      |   choice: verdict, source: "operator"},               |
|                                      |   then EXECUTION_RESUMED(null)                        |
| crashed (running/pending)            | nothing: it is parked at no gate                      |
| terminal (resumeAs only)             | EXECUTION_RESUMED(null): re-opens it, answers nothing |

Recovery is the kernel's own resume of a crashed execution: EXECUTION_RECOVERED {}
and nothing else. A resumeAs also records EXECUTION_MIGRATED first.

Code versions (K11, spec/versions.py): an execution is pinned to the version of
the program it started on (or last migrated to). A resume or recovery on a
runtime whose registered program for that flow has another version is refused
code-mismatch; resumeAs onto the new version is the exit. A resumeAs may carry
a transformState (ADR 0056, spec/transforms.py): applied to the folded _input,
its outcome recorded as EXECUTION_MIGRATED.migratedInput, never run again.

The ingress of a resume, in order (each step refuses before anything is appended):
1. the ingress gate: kernel namespace, parked, the parked gate's name (a timed
   park is also woken by TIMER_FIRED);
1a. the payload and the options it travels with are JSON a store holds, within
   the bounds of reference/limits.py (invalid-payload, payload-too-large: ADR 0077
   Context, once appended a payload is a permanent fold input); an id or a type
   that is not storable text names no execution or gate;
2. the binding (ADR 0117 D1, D5): a TIMER_FIRED needs the system grant on a
   strict runtime; any other answer must echo the parked viewDigest;
3. identity (ADR 0077 D3, ADR 0117 D2): the authenticator, bound to this park
   (and, beyond the ADR, to the operation and incarnation: spec/signing.md section 10);
3a. the code (K11): a plain resume is refused code-mismatch when the registered
   program is not the version the execution is pinned to;
3b. legacy answers (ADR 0104 D2, R1a; spec/legacy-logs.md): the stray scan warns,
   refuses ambiguous-legacy-answers, and admits an authenticated override;
4. shape (ADR 0077): the declared resumeSchemas entry; a timer wake is
   normalised to exactly {wakeAt} instead;
then APPROVAL_GRANTED {actor, verifiedBy} when an authenticator granted it, the
operator's override as a __loom_discard__ decision, the resume-typed event and
the recording above. Recovery runs the code check and the stray scan.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

from loomcheck.reference.context import (
    FlowContext,
    Park,
    StepFailed,
    World,
    WorkerCrashed,
    indoubt_decision_id,
    is_verdict_for,
)
from loomcheck.reference.approvals import parked_at_sequence
from loomcheck.reference.authenticator import Verdict
from loomcheck.reference.clock import Clock
from loomcheck.reference.errors import (
    ConfigError,
    EmitRefusedError,
    FlowCodeMismatchError,
    FlowDefinitionError,
    InputValidationError,
    KernelRefusal,
    ResumePayloadValidationError,
    ResumeRefusedError,
    StateMigrationError,
)
from loomcheck.reference.events import JSON, Event, NotJson, TooLarge, check_text, to_plain_json
from loomcheck.reference.fold import HANDLERS, IN_DOUBT_GATE, TERMINAL, Handler, State, apply, fold
from loomcheck.reference.interpreter import run_program
from loomcheck.reference.limits import MAX_BYTES, MAX_DEPTH
from loomcheck.reference.legacy import CachedScan, Discard, ScanCache, Warn, WarnMemory, kinds_of, parse_discard, warning_of
from loomcheck.reference.scanner import Kinds, NonContiguous, StrayScanner, Verdict as ScanVerdict
from loomcheck.reference.security import ResumeOptions, Security
from loomcheck.reference.transforms import apply_transform
from loomcheck.reference.stores.base import EventStore, stream
from loomcheck.spec.names import APPROVAL_GRANTED, TIMER_FIRED
from loomcheck.spec.parsing import Invalid, Parsed, parse
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.vocabulary import kernel_event_types

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


class Runtime:
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
        self.flows[flow_id] = program
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
        found = parked_at_sequence(events)
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
        if isinstance(parsed, Invalid):
            raise InputValidationError("invalid-input", f"field {parsed.field}: {parsed.message}")
        if parsed is not None:
            value = parsed.value  # ADR 0077: the parsed value is what is recorded
        started: dict[str, JSON] = {"flowId": flow_id, "input": value}
        if self.versions.get(flow_id) is not None:
            started["version"] = self.versions[flow_id]  # the execution is pinned to this code (K11)
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
        if is_kernel_type(event_type):
            raise ResumeRefusedError("kernel-namespace", f"{event_type} is a kernel event type")
        self._require_flow(target_flow)
        answer = self._plain_payload(payload, options)
        grant = None
        if state.status != "suspended":  # nothing is parked, so the type is recorded as given
            bounded(lambda: check_text(event_type, MAX_BYTES), "the event type", ResumePayloadValidationError,
                    "invalid-payload", "payload-too-large")
        if state.status == "suspended":
            self.check_resumable(state, event_type)
            # ADR 0077 D4: the TARGET flow's declared shape, before EXECUTION_MIGRATED.
            answer, grant, discard = self.admit(execution_id, state, events, event_type, answer, options,
                                                target_flow, operation={"type": "resumeAs", "flowId": target_flow,
                                                                        "transformState": options.transform_state})
        else:
            # Nothing is parked; a re-open of a terminal execution is judged as live (D2).
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
            # Re-opens it, so a later crash is recoverable, without answering a gate.
            append("EXECUTION_RESUMED", None)
        return self.drive(execution_id, self.advanced(state, events, append))

    def migrate_state(self, state: State, target_flow: str, transform: JSON) -> JSON:
        """ADR 0056 D1, D3: the transform's outcome on the FOLDED _input (an earlier
        migration may have replaced it), then the target's input contract on what the
        target will run with. Either refuses with StateMigrationError before any append."""
        program = self.flows[target_flow]
        current = state.variables.get("_input")
        outcome = current if transform is None else apply_transform(transform, current, program.inputSchema)
        if transform is not None:  # what is recorded as migratedInput: bounded like any input (a wrap nests it)
            outcome = self.ingress(outcome, "the migrated input", InputValidationError, "invalid-input",
                                   "input-too-large")
        parsed = self.input_contract(program, outcome)
        if isinstance(parsed, Invalid):
            raise StateMigrationError("input-contract", f"the target flow {target_flow!r} does not accept the "
                                      f"input it would run with (field {parsed.field}: {parsed.message}); "
                                      f"a transformState can migrate it")
        return outcome

    @staticmethod
    def input_contract(program: FlowProgram, value: JSON) -> Parsed | Invalid | None:
        """The flow's declared input contract applied to an input it would run with;
        None when it validates no input (ADR 0077 Context)."""
        if not program.validateInput or program.inputSchema is None:
            return None
        return parse(program.inputSchema, value)

    def migration_record(self, state: State, target_flow: str, transform: JSON, migrated: JSON) -> dict[str, JSON]:
        """EXECUTION_MIGRATED: without a transform exactly as before 1.15.0 (ADR 0056 D3)."""
        record: dict[str, JSON] = {"fromFlow": state.flow_id, "toFlow": target_flow}
        if state.version is not None:
            record["fromVersion"] = state.version
        if self.versions.get(target_flow) is not None:
            record["toVersion"] = self.versions[target_flow]
        if transform is not None:
            record["migratedInput"] = migrated  # D1: the outcome is durable, the function never is
        return record

    def check_code(self, state: State) -> None:
        """K11: an execution runs only on the code it is pinned to; resumeAs is the exit."""
        registered = self.versions.get(state.flow_id or "")
        if state.version is not None and registered is not None and state.version != registered:
            raise FlowCodeMismatchError("code-mismatch", f"the execution is pinned to {state.version} of flow "
                                        f"{state.flow_id!r}, but {registered} is registered; resumeAs onto it "
                                        f"(with a transformState if its input contract changed)")

    def admit(self, execution_id: str, state: State, events: list[Event], event_type: str, answer: JSON,
              options: ResumeOptions, flow_id: str | None, pinned: bool = False,
              operation: dict[str, JSON] | None = None) -> tuple[JSON, Verdict | None, Discard | None]:
        """After the ingress gate, in order: the binding, identity, the code (a plain
        resume runs on the code it is pinned to), legacy answers, then shape (ADR 0077
        D3, ADR 0117 D1, D2, D5, ADR 0104 D2). The answer to record, the
        authenticator's grant and the operator's override, if any."""
        self.check_binding(state, event_type, answer, options)
        grant = self.authenticate(execution_id, state, events, event_type, answer, options, operation)
        self._require_flow(flow_id)
        if pinned:
            self.check_code(state)  # the shape is the pinned code's, which must be the one registered
        discard = self.scan_legacy(execution_id, flow_id, options, grant, event_type)
        answer = self.shape_answer(self.flows[flow_id or ""], state, event_type, answer)
        self.check_answer(state, answer)
        return answer, grant, discard

    # -- legacy answers (ADR 0104 D2, amendment R1a) ---------------------------------
    def scan_legacy(self, execution_id: str, flow_id: str | None, options: ResumeOptions | None,
                    grant: Verdict | None, event_type: str | None, live: bool = False) -> Discard | None:
        """The stray scan (spec/legacy-logs.md): warn, then refuse ambiguous-legacy-answers
        unless an authenticated override resolves the step. The override to record, if any."""
        discard = parse_discard(options.discard_legacy_answers if options else None)
        if discard is not None:
            if event_type == TIMER_FIRED or options is None or options.system:
                raise ResumeRefusedError("discard-on-kernel-resume", "an override is an operator's approval; "
                                         "the kernel's own resumes carry none")
            if grant is None:
                raise ResumeRefusedError("discard-unverified", "discardLegacyAnswers is honoured only on an event "
                                         "the configured ResumeAuthenticator verified, covering the override")
        verdict = self.scanned(execution_id, self.flows.get(flow_id or ""), live, fresh=discard is not None)
        self.warn(execution_id, verdict)
        ambiguous = verdict.ambiguous_steps()
        if discard is not None:
            if discard.step_id not in ambiguous:
                raise ResumeRefusedError("discard-without-ambiguity", f"the log holds no unresolved ambiguity "
                                         f"for step {discard.step_id!r}")
            ambiguous.discard(discard.step_id)
        if ambiguous:
            raise ResumeRefusedError("ambiguous-legacy-answers", f"the answers of human step(s) "
                                     f"{', '.join(sorted(ambiguous))} cannot be told apart from pre-0104 entries; "
                                     f"inspect the log, then resume with an authenticated discardLegacyAnswers")
        return discard

    def scanned(self, execution_id: str, program: FlowProgram | None, live: bool, fresh: bool) -> ScanVerdict:
        """R1a: feed the cached clean scanner only the new events, or scan the whole
        retained log; keep the scanner again only when its verdict is clean."""
        kinds = kinds_of(program)
        cached = self.scans.take(execution_id)
        last = self.store.next_seq(execution_id) - 1
        scanner: StrayScanner | None = None
        if cached is not None and not fresh and cached.definition is program and last >= cached.seq:
            try:
                cached.scanner.feed(self.store.read(execution_id, after=cached.seq), kinds)
                scanner = cached.scanner
            except NonContiguous:
                scanner = None  # the tail does not continue what was scanned: rescan
            if scanner is not None and scanner.consumed != last:
                scanner = None  # retention removed events it never saw
        if scanner is None:
            scanner = self.full_scan(execution_id, kinds)
        verdict = scanner.verdict(live)
        if verdict.clean and not fresh:
            self.scans.keep(execution_id, CachedScan(scanner, scanner.consumed, program))
        return verdict

    def full_scan(self, execution_id: str, kinds: Kinds) -> StrayScanner:
        """One pass over the retained log, streamed a page at a time (a long log is never held whole)."""
        events = stream(self.store, execution_id)
        head = next(events, None)
        first = head.seq if head is not None else self.store.next_seq(execution_id)
        snapshot = self.store.get_snapshot(execution_id) if first > 1 else None
        if snapshot is not None:
            scanner = StrayScanner.from_snapshot(snapshot[1], first - 1)  # the prefix was retained away
        else:
            scanner = StrayScanner(consumed=first - 1)
        if head is not None:
            scanner.feed(itertools.chain((head,), events), kinds)
        return scanner

    @contextmanager
    def refusal_drops_scan(self, execution_id: str) -> Iterator[None]:
        """R1a: a refusal drops the cached scanner; the next operation scans the whole log."""
        try:
            yield
        except KernelRefusal:
            self.scans.drop(execution_id)
            raise

    def warn(self, execution_id: str, verdict: ScanVerdict) -> None:
        for kind in verdict.warned:
            if self.warned.first_time(execution_id, kind) and self.on_warn is not None:
                self.on_warn(warning_of(execution_id, verdict, kind))

    @staticmethod
    def record_discard(append: Appender, discard: Discard | None, grant: Verdict | None) -> None:
        """ADR 0104 D2: the override is itself an approval, recorded in the reserved namespace."""
        if discard is not None and grant is not None:
            append("DECISION_RECORDED", {"decisionId": discard.decision_id, "choice": discard.count,
                                         "source": "operator", "rationale": {"approval": grant.evidence()}})

    def check_resumable(self, state: State, event_type: str) -> None:
        """The ingress gate, in order: kernel namespace, parked, the parked gate's name
        (a timed park is also woken by TIMER_FIRED, ADR 0117 D5)."""
        if is_kernel_type(event_type):
            raise ResumeRefusedError("kernel-namespace", f"{event_type} is a kernel event type")
        parked_on = state.parked_on
        if parked_on is None:
            raise ResumeRefusedError("not-suspended", f"execution is {state.status}, not parked")
        timed = "wakeAt" in (state.suspended_on or {})
        if event_type != parked_on and not (event_type == TIMER_FIRED and timed):
            raise ResumeRefusedError("gate-mismatch", f"execution is parked on {parked_on!r:.80}, not {event_type!r:.80}")

    def check_binding(self, state: State, event_type: str, answer: JSON, options: ResumeOptions) -> None:
        """After the gate's name: the kernel's wake needs its grant on a strict runtime
        (ADR 0117 D5); any other answer must echo the parked viewDigest exactly (D1)."""
        condition = state.suspended_on or {}
        if event_type == TIMER_FIRED and "wakeAt" in condition:
            if self.security.strict and not options.system:
                raise ResumeRefusedError("timer-wake-not-system",
                                         "a TIMER_FIRED without the runtime's system grant (strict)")
            return  # the timer's wake is exempt from the digest
        if "viewDigest" in condition:
            echoed = answer.get("viewDigest") if isinstance(answer, dict) else None
            if type(echoed) is not str or echoed != condition["viewDigest"]:
                raise ResumeRefusedError("view-digest-mismatch",
                                         "the answer does not echo the viewDigest of the proposal this gate parked on")

    def authenticate(self, execution_id: str, state: State, events: list[Event], event_type: str, answer: JSON,
                     options: ResumeOptions, operation: dict[str, JSON] | None = None) -> Verdict | None:
        """Identity, before shape (ADR 0077 D3): the authenticator sees exactly what the
        caller sent, bound to the park it answers (ADR 0117 D2), to the operation (None: a
        plain resume) and to the incarnation (spec/signing.md section 10)."""
        authenticator = self.security.authenticator
        if authenticator is None or not authenticator.applies_to(event_type):
            return None
        parked_at = self.locate_park(execution_id, events)
        if parked_at is None:
            raise ResumeRefusedError("park-not-located", "the EXECUTION_SUSPENDED this approval answers is no "
                                                         "longer in the log; an approval is never bound to the tip")
        context = {"executionId": execution_id, "parkedAtSequence": parked_at, "principal": options.principal,
                   "operation": operation or {"type": "resume"}, "incarnation": self.incarnation(execution_id)}
        verdict = authenticator.verify(options.event(event_type, answer), context)
        if verdict.status == "rejected":
            raise ResumeRefusedError("unauthenticated", f"the approval was rejected: {verdict.reason}")
        return verdict if verdict.status == "granted" else None

    def shape_answer(self, program: FlowProgram, state: State, event_type: str, answer: JSON) -> JSON:
        """What is recorded: the timer's wake as exactly {wakeAt} from the parked condition
        (ADR 0117 D5: no caller field reaches the flow), else the parsed answer (ADR 0077)."""
        condition = state.suspended_on or {}
        if event_type == TIMER_FIRED and "wakeAt" in condition:
            return {"wakeAt": condition["wakeAt"]}
        return self.parse_answer(program, event_type, answer)

    @staticmethod
    def record_grant(append: Appender, grant: Verdict | None) -> None:
        if grant is not None:
            append(APPROVAL_GRANTED, grant.evidence())  # ADR 0117 D2: who approved, as evidence

    @staticmethod
    def parse_answer(program: FlowProgram, event_type: str, answer: JSON) -> JSON:
        """ADR 0077: a declared shape is parsed after identity and before the append;
        the parsed value is what is recorded. No entry: the payload as sent (D2)."""
        schema = program.resume_schema(event_type)
        if schema is None:
            return answer
        parsed = parse(schema, answer)
        if isinstance(parsed, Invalid):
            raise ResumePayloadValidationError("invalid-payload", f"field {parsed.field}: {parsed.message}")
        return parsed.value

    def check_answer(self, state: State, answer: JSON) -> None:
        """At an in-doubt park only a verdict for the parked step is an answer."""
        if state.parked_on == IN_DOUBT_GATE:
            step_id = (state.suspended_on or {}).get("stepId")
            if not isinstance(step_id, str) or not is_verdict_for(answer, step_id):
                raise ResumePayloadValidationError(
                    "not-a-verdict", f"an in-doubt park of step {step_id!r} takes "
                                     f"{{stepId: {step_id!r}, resolution: succeeded|failed|retry-fresh, output?}}")

    def record_answer(self, append: Appender, state: State, answer: JSON) -> None:
        if state.parked_on == IN_DOUBT_GATE:
            # The verdict answers ONE park, of one attempt of one step: a decision, not an entry.
            condition = state.suspended_on or {}
            decision_id = indoubt_decision_id(str(condition.get("stepId")), int(condition.get("attempt") or 1))
            append("DECISION_RECORDED", {"decisionId": decision_id, "choice": answer, "source": "operator"})
            append("EXECUTION_RESUMED", None)
        else:
            append("EXECUTION_RESUMED", answer)  # the payload IS that gate's answer

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
        self.scan_legacy(execution_id, state.flow_id, None, None, None)  # recovery included (D2)
        # ADR 0104 D1, crashed: EXECUTION_RECOVERED {} and nothing else; it answers no gate.
        append = Appender(self.store, execution_id, state.sequence + 1)
        append(RECOVERED, {})
        return self.drive(execution_id, self.advanced(state, events, append))

    def recover_abandoned(self) -> list[str]:
        """Re-drive every crashed execution; parked and finished ones are skipped."""
        recovered = []
        for execution_id in self.store.executions():
            state = self.state(execution_id)
            if state.status in ("running", "pending") and state.flow_id in self.flows:
                try:
                    self.recover(execution_id)
                except FlowCodeMismatchError:
                    continue  # pinned to code this runtime no longer has: resumeAs is the exit
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
                    self.resume(execution_id, TIMER_FIRED, None, ResumeOptions(system=True))
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

    def _plain_payload(self, payload: JSON, options: ResumeOptions | None = None) -> JSON:
        """The payload as a store hands it back, and the options it travels with checked alike:
        a transformState's value becomes migratedInput, a proof goes to the authenticator."""
        options = options or ResumeOptions()
        self.ingress([options.proof, options.principal, options.discard_legacy_answers, options.transform_state],
                     "the resume options", ResumePayloadValidationError, "invalid-payload", "payload-too-large")
        return self.ingress(payload, "the payload", ResumePayloadValidationError, "invalid-payload",
                            "payload-too-large")

    def ingress(self, value: JSON, what: str, error: type[KernelRefusal], not_json: str, too_large: str) -> JSON:
        """A caller's value as a store hands it back, or a typed refusal before anything is appended."""
        return bounded(lambda: to_plain_json(value, self.max_depth, self.max_bytes), what, error, not_json, too_large)


def is_kernel_type(event_type: object) -> bool:
    """Own names only, and only strings: a list or an object names no type (it is not hashable)."""
    return type(event_type) is str and event_type in kernel_event_types()


def bounded(check: Callable[[], JSON], what: str, error: type[KernelRefusal], not_json: str, too_large: str) -> JSON:
    """Ingress (ADR 0077 Context: "Once appended it is a permanent fold input"): the value `check`
    returns, or a typed refusal before anything is appended. `too_large` past the reference's
    bounds (reference/limits.py, a profile choice), `not_json` for what no store holds."""
    try:
        return check()
    except TooLarge as exc:
        raise error(too_large, f"{what}: {exc}; the reference takes at most {MAX_DEPTH} levels of nesting "
                               f"and {MAX_BYTES} bytes of JSON (spec/profiles.toml, ingress-limits)") from None
    except NotJson as exc:
        raise error(not_json, f"{what} is not storable: {exc}") from None


__all__ = ["Runtime", "KernelRefusal", "Driven", "ConfigError", "ResumeOptions"]
