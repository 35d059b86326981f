"""A session applies operations to one implementation and records what every check needs: the
outcome, the execution's log before and after, its state and (with the "fold" feature) its own
fold of the new log. Every call crosses the driver boundary (contract/boundary.py); what the
harness hands the implementation is a copy (contract/jsondata.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from pydantic import ValidationError

from loomcheck.contract.boundary import ImplementationFailed, guarded, outcome_of
from loomcheck.contract.driver import JSON, Driver, Hello, Outcome
from loomcheck.contract.jsondata import BOUNDS, handed, plain
from loomcheck.contract.needs import Undeclared, operations_need
from loomcheck.contract.proofs import with_own_proof
from loomcheck.contract.shown import brief
from loomcheck.contract.script import (
    AdvanceClock,
    Configure,
    Define,
    Kill,
    Load,
    Operation,
    Recover,
    RecoverAbandoned,
    Restart,
    Resume,
    ResumeAs,
    Start,
    describe,
    execution_of,
    to_json,
)
from loomcheck.spec.canonical import CanonicalError
from loomcheck.spec.names import CLOCK_START_MS
from loomcheck.spec.versions import code_version, pinned_version
from loomcheck.spec.programs import FlowProgram


@dataclass
class Step:
    index: int
    op: Operation
    outcome: Outcome
    execution: str | None
    log_before: list[dict[str, JSON]]
    log_after: list[dict[str, JSON]]
    state_after: dict[str, JSON] | None
    folded_after: dict[str, JSON] | None
    effects_after: list[dict[str, JSON]] | None = None   # feature "effect-ledger"
    others: dict[str, tuple[list[dict[str, JSON]], list[dict[str, JSON]]]] | None = None  # recover-abandoned: every log, before and after
    recovered: list[str] | None = None   # recover-abandoned: re-driven; advance-clock: woken by the timer
    parked_at: int | None = None         # feature "security": the kernel's parkedAtSequence after the step


@dataclass
class Trace:
    """Everything a predicate may look at: the flows defined, the snapshot each
    loaded execution started from, and the steps so far."""

    flows: dict[str, FlowProgram] = field(default_factory=dict)
    snapshots: dict[str, dict[str, JSON]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    security: dict[str, JSON] = field(default_factory=dict)  # the last configuration the kernel accepted
    now: int = CLOCK_START_MS  # the driver's clock: CLOCK_START_MS after reset, moved only by advance-clock
    features: frozenset[str] = frozenset()  # what the implementation declared
    registered: dict[str, str | None] = field(default_factory=dict)  # flow id -> code version deployed now (K11)
    by_version: dict[str, FlowProgram] = field(default_factory=dict)  # every program ever deployed, by code version
    erasures: dict[str, int] = field(default_factory=dict)  # execution id -> times erased: which incarnation it is now

    @property
    def operations(self) -> list[Operation]:
        return [s.op for s in self.steps]

    def flow_of(self, log: list[dict[str, JSON]], execution: str | None = None) -> FlowProgram | None:
        """The program an execution runs now: its start's, or its latest migration's target;
        the version it is pinned to when its log records one (a redeploy does not change it)."""
        from loomcheck.contract.logview import flow_id_of

        snapshot = self.snapshots.get(execution or "")
        pinned = pinned_version(log, snapshot)
        if pinned is not None and pinned in self.by_version:
            return self.by_version[pinned]
        flow_id = flow_id_of(log, snapshot)
        return self.flows.get(flow_id) if flow_id is not None else None


def hello_of(driver: Driver) -> Hello:
    data = guarded("hello", lambda: driver.hello(), _hello_data)
    try:
        return Hello.model_validate(data)
    except ValidationError as exc:
        raise ImplementationFailed("hello", f"hello is not {{name, version, eventSchema, features}}: {exc.errors()[0]['msg']}") from None


def _hello_data(raw: Any) -> Any:
    """Hello's fields as plain data: a Hello (or a subclass's) read field by field, inside the guard."""
    if isinstance(raw, Hello):
        raw = {name: getattr(raw, name) for name in Hello.model_fields}
    return plain(raw)


class Session:
    def __init__(self, driver: Driver, features: frozenset[str], deadline: float | None = None) -> None:
        self.driver = driver
        self.features = features
        self.deadline = deadline  # time.monotonic() after which every call stops the run
        self.trace = Trace(features=features)
        self.deployed: dict[str, Any] = {}  # flow id -> the program as last defined (a redefinition is K11's)
        self.in_flight: Operation | None = None  # the operation being applied, kept if the implementation fails
        # Told of every step recorded, whichever check applied it (the coverage report listens here).
        self.observers: list[Callable[[Step, Trace], None]] = []
        # Every proof the harness signed (spec/signing.md notation) -> its claim and secret, so an
        # implementation that signs its own is handed its own proof for the same claim (contract/proofs.py).
        self.claims: dict[str, Any] = {}
        self.bounds = BOUNDS  # what its answers may be (contract/jsondata.py): deeper once it is handed deeper

    def _hand(self, value: Any) -> Any:
        """A copy of `value` for the implementation; its answers may now nest as deep as it does."""
        copy, depth = handed(value)
        self.bounds = self.bounds.beyond(depth)
        return copy

    def _plain(self, raw: Any) -> Any:
        return plain(raw, self.bounds)

    def script(self) -> list[Operation]:
        """The operations so far, including one the implementation failed on."""
        ops = self.trace.operations
        return ops + [self.in_flight] if self.in_flight is not None else ops

    def reset(self) -> None:
        self.in_flight = None
        self._call("reset", lambda: self.driver.reset())
        self.trace = Trace(features=self.features)
        self.deployed = {}

    def require(self, needs: set[str] | frozenset[str] | tuple[str, ...], what: str) -> None:
        """Every driver call of a feature goes through here first: a case that needs one the
        implementation did not declare stops with `Undeclared` before the call is made."""
        missing = set(needs) - self.features
        if missing:
            raise Undeclared(what, missing)

    def apply(self, op: Operation) -> Step:
        prior = [Define(flow, program) for flow, program in self.deployed.items()] if isinstance(op, Define) else []
        self.require(operations_need([*prior, op]), describe(op))
        self.in_flight = op
        execution = execution_of(op)
        before = self.read_log(execution) if execution is not None else []
        if isinstance(op, (RecoverAbandoned, AdvanceClock, Kill)):
            return self._across_executions(op)
        outcome = self._outcome(describe(op), lambda: self._dispatch(op))
        if isinstance(op, Configure) and outcome.ok:
            self.trace.security = dict(op.config)
        if isinstance(op, Define) and outcome.ok:
            self.deployed[op.flow] = op.program
            version = self.trace.registered[op.flow] = _version_of(op.program)
            try:
                self.trace.flows[op.flow] = FlowProgram.model_validate(op.program)
            except ValidationError:
                self.trace.flows.pop(op.flow, None)  # accepted, though the spec does not: predicates see no flow
            else:
                if version is not None:
                    self.trace.by_version[version] = self.trace.flows[op.flow]
        if isinstance(op, Load) and outcome.ok and op.snapshot is not None:
            self.trace.snapshots[op.execution] = op.snapshot
        after: list[dict[str, JSON]] = []
        state = folded = None
        if execution is not None:
            after = self.read_log(execution)
            if after or execution in self.trace.snapshots:
                state = self.read_state(execution)
                if "fold" in self.features:
                    folded = self.fold(after, self.trace.snapshots.get(execution))
        effects = self.effects(execution) if execution is not None and "effect-ledger" in self.features else None
        step = Step(len(self.trace.steps), op, outcome, execution, before, after, state, folded, effects)
        if execution is not None and "security" in self.features and (state or {}).get("status") == "suspended":
            step.parked_at = self.parked_at_sequence(execution)
        return self._record(step)

    def _record(self, step: Step) -> Step:
        self.trace.steps.append(step)
        self.in_flight = None
        for observe in self.observers:
            observe(step, self.trace)
        return step

    def executions(self) -> list[str]:
        """Every execution the script has started or loaded, in order."""
        ops = [s.op.during if isinstance(s.op, Kill) and s.op.during is not None else s.op for s in self.trace.steps]
        seen = dict.fromkeys(e for e in (execution_of(op) for op in ops) if e is not None)
        return list(seen)

    def _across_executions(self, op: RecoverAbandoned | AdvanceClock | Kill) -> Step:
        """An operation that may drive any execution: every log, before and after."""
        known = self.executions()
        if isinstance(op, Kill) and op.during is not None:
            known = list(dict.fromkeys(known + [x for x in [execution_of(op.during)] if x is not None]))
        before = {x: self.read_log(x) for x in known}
        if isinstance(op, Kill):
            during = self._hand(to_json(with_own_proof(self, op.during))) if op.during is not None else None
            self._call(describe(op), lambda: self.driver.kill(during, op.after_appends))  # type: ignore[attr-defined]
            others = {x: (before[x], self.read_log(x)) for x in known}
            step = Step(len(self.trace.steps), op, Outcome.accepted(crashed=True), None, [], [], None, None, None, others)
            return self._record(step)
        if isinstance(op, AdvanceClock):
            self.trace.now += op.ms
            recovered = self._call(describe(op), lambda: self.driver.advance_clock(op.ms), self._plain)
        else:
            recovered = self._call(describe(op), lambda: self.driver.recover_abandoned(), self._plain)
        if not isinstance(recovered, list) or not all(isinstance(x, str) for x in recovered):
            raise ImplementationFailed(describe(op), f"returned {brief(recovered)}, not a list of execution ids")
        others = {x: (before[x], self.read_log(x)) for x in known}
        step = Step(len(self.trace.steps), op, Outcome.accepted(), None, [], [], None, None, None, others, recovered)
        return self._record(step)

    def effects(self, execution: str) -> list[dict[str, JSON]]:
        self.require({"effect-ledger"}, f"effects {execution}")
        ledger = self._call(f"effects {execution}", lambda: self.driver.effects(execution), self._plain)
        if not isinstance(ledger, list) or not all(isinstance(e, dict) for e in ledger):
            raise ImplementationFailed(f"effects {execution}", "not a list of {stepId, attempt} objects")
        return ledger

    def parked_at_sequence(self, execution: str) -> int | None:
        self.require({"security"}, f"parked_at_sequence {execution}")
        seq = self._call(f"parked_at_sequence {execution}", lambda: self.driver.parked_at_sequence(execution), self._plain)
        if seq is not None and type(seq) is not int:
            raise ImplementationFailed(f"parked_at_sequence {execution}", f"returned {brief(seq)}, not a sequence or null")
        return seq

    def sign(self, claim: dict[str, JSON]) -> dict[str, JSON] | None:
        """The implementation's own proof for `claim` (feature "signing", ADR 0117 D2), or None when
        its approver side refuses to sign it (a refusal is data)."""
        self.require({"signing"}, "sign")
        if len(self.claims) > 100_000:
            self.claims.clear()  # a bound on memory: a forgotten claim is only verified again, not lost
        signed = self._call("sign", lambda: self.driver.sign(self._hand(claim)), self._plain)
        if isinstance(signed, dict) and isinstance(signed.get("proof"), dict) and set(signed) == {"proof"}:
            return signed["proof"]
        refused = signed.get("refused") if isinstance(signed, dict) else None
        if isinstance(refused, dict) and isinstance(refused.get("reason"), str) and refused["reason"]:
            return None
        raise ImplementationFailed("sign", f"returned {brief(signed)}, not {{proof: object}} nor {{refused: {{reason}}}}")

    # -- reads -------------------------------------------------------------------
    def read_log(self, execution: str) -> list[dict[str, JSON]]:
        log = self._call(f"read_log {execution}", lambda: self.driver.read_log(execution), self._plain)
        if not isinstance(log, list) or not all(_is_event(e) for e in log):
            raise ImplementationFailed(f"read_log {execution}", "not a list of {seq, type, payload} events")
        return log

    def read_state(self, execution: str) -> dict[str, JSON]:
        state = self._call(f"read_state {execution}", lambda: self.driver.read_state(execution), self._plain)
        if not isinstance(state, dict):
            raise ImplementationFailed(f"read_state {execution}", f"not an object: {type(state).__name__}")
        return state

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        self.require({"fold"}, "fold")
        # Copies: a fold that scribbles on what it is handed must not change the step's record of the log.
        state = self._call("fold", lambda: self.driver.fold(self._hand(events), self._hand(snapshot)), self._plain)
        if not isinstance(state, dict):
            raise ImplementationFailed("fold", f"not an object: {type(state).__name__}")
        return state

    # -- calls no script operation expresses yet ------------------------------------
    def unscripted(self, label: str, call: Callable[[], Any], needs: Iterable[str] = (), data: bool = False) -> Any:
        """A driver call outside the script (appending as another node of the fleet,
        retention, reading warnings: ADR 0104 D2), guarded like every other call;
        `needs`: the features it uses (docs/driver.md names each method's); `data`: its
        answer is JSON data, checked and copied as every read's is."""
        self.require(frozenset(needs), label)
        return self._call(label, call, self._plain if data else None)

    def erase(self, execution: str) -> None:
        """Forget one execution (feature "legacy-scan"); the next under its id is another incarnation,
        which approvals are bound to (spec/signing.md section 10)."""
        self.unscripted(f"erase {execution}", lambda: self.driver.erase(execution), needs=("legacy-scan",))
        self.trace.erasures[execution] = self.trace.erasures.get(execution, 0) + 1

    def unscripted_outcome(self, label: str, call: Callable[[], Any], needs: Iterable[str] = ()) -> Outcome:
        self.require(frozenset(needs), label)
        return self._outcome(label, call)

    # -- calls -------------------------------------------------------------------
    def _dispatch(self, op: Operation) -> Any:
        """The operation's call, with copies of everything the harness keeps (its script, its
        trace): what the implementation does to an argument stays its own."""
        if isinstance(op, Define):
            return self.driver.define_flow(op.flow, self._hand(op.program))
        if isinstance(op, Start):
            return self.driver.start(op.execution, op.flow, self._hand(op.input))
        if isinstance(op, (Resume, ResumeAs)):
            op = with_own_proof(self, op)  # ADR 0117 D2: the implementation's own proof format, if it has one
        if isinstance(op, Resume):
            if op.options:  # only then: a kernel without the "security" feature takes three arguments
                return self.driver.resume(op.execution, op.type, self._hand(op.payload), self._hand(op.options))
            return self.driver.resume(op.execution, op.type, self._hand(op.payload))
        if isinstance(op, Recover):
            return self.driver.recover(op.execution)
        if isinstance(op, ResumeAs):
            if op.options:
                return self.driver.resume_as(op.execution, op.flow, op.type, self._hand(op.payload), self._hand(op.options))
            return self.driver.resume_as(op.execution, op.flow, op.type, self._hand(op.payload))
        if isinstance(op, Configure):
            return self.driver.configure(self._hand(op.config))
        if isinstance(op, Restart):
            self.driver.restart()
            return Outcome.accepted()
        if isinstance(op, Load):
            return self.driver.load(op.execution, self._hand(op.events), self._hand(op.snapshot))
        raise TypeError(op)

    def _outcome(self, label: str, call: Callable[[], Any]) -> Outcome:
        return self._call(label, call, lambda raw: outcome_of(label, raw))

    def _call(self, label: str, call: Callable[[], Any], shape: Callable[[Any], Any] | None = None) -> Any:
        return guarded(label, call, shape, self.deadline)


def _version_of(program: dict[str, JSON]) -> str | None:
    try:
        return code_version(program)
    except CanonicalError:
        return None  # a program with no canonical JSON has no code version (spec/versions.py)


def _is_event(event: Any) -> bool:
    return isinstance(event, dict) and isinstance(event.get("seq"), int) and isinstance(event.get("type"), str) \
        and "payload" in event
