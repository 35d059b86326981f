"""The driver interface: the one way every check talks to an implementation.

A kernel is plugged into loomcheck by an object with the methods of `Driver`
below. `loomcheck run --impl python:MODULE:FACTORY` imports MODULE and calls
FACTORY() (no arguments) to get one. The reference kernel's driver
(`loomcheck.reference.driver:ReferenceDriver`) is one such object.

Values crossing the interface are plain JSON values (dict, list, str, int,
float, bool, None). Logs are lists of events `{"seq": int, "type": str,
"payload": JSON}`, oldest first. States are the observable folded state:

    {"sequence": int,            # seq of the last event folded
     "status": "pending" | "running" | "suspended" | "completed" | "failed" | "cancelled",
     "flowId": str | None,
     "suspendedOn": {"on": str, ...} | None,   # the parking condition, verbatim
     "variables": {"_input": ..., "_resumePayloads": [...], "_resumePayload": ..., ...},
     "steps": {stepId: {"status": ..., "attempt": int, "output": ...}},
     "output": JSON, "error": JSON}

Operations that the kernel may refuse return an `Outcome`: accepted, or refused
with the error type and a reason from `spec/refusals.toml`. A refusal is data,
never an exception. An exception escaping a driver method is the implementation
failing, and the harness reports it as an `error` finding for the case at hand.

Features: `hello()` lists the optional features the implementation supports:

    "fold"              fold(events, snapshot) folds a given log from nothing
    "load-log"          load(execution_id, events, snapshot) imports a log written elsewhere
    "recover"           crash faults in flow programs ("crash" on a step), and
                        recover(execution_id) / recover_abandoned() re-drive a crashed execution
    "resume-as"         resume_as(execution_id, flow_id, event_type, payload): resume onto another flow
    "restart"           restart() discards the runtime's memory, as a process restart would
    "effect-ledger"     effects(execution_id) lists every effect execution (step, attempt)
    "input-validation"  a flow's inputSchema with validateInput: true is enforced by start()
    "resume-schemas"    a flow's resumeSchemas are enforced by resume() and resume_as() (ADR 0077)
    "human-steps"       steps of kind "human" in flow programs
    "in-doubt"          steps of kind "non-idempotent", their in-doubt parks and verdicts
    "parallel"          the "parallel" op in flow programs
    "emit-guard"        kernel event types in emits, effect-level emits and "decide"
    "view-digest"       gates with "view" / "viewDigest" in flow programs: the kernel records
                        the digest (spec/canonical-json.md) and refuses a resume that does not
                        echo it, view-digest-mismatch (ADR 0117 D1)
    "timers"            timed gates ("timeout") and "sleep" in flow programs, and
                        advance_clock(ms); the clock reads CLOCK_START_MS (spec/names.py)
                        after reset (ADR 0117 D5)
    "legacy-scan"       the stray scan of ADR 0104 D2 (spec/legacy-logs.md) on resume, resumeAs and
                        recovery: refusal ambiguous-legacy-answers, the discardLegacyAnswers override,
                        warnings() lists what the kernel's on_warn said; append_events(execution_id,
                        events) writes as another node of a mixed-version fleet would, and
                        erase(execution_id) forgets one execution
    "retention"         truncate_prefix(execution_id, upto) keeps the folded state as of `upto` as a
                        snapshot and deletes the events up to it
    "durable"           the store lives under $LOOMCHECK_STORE_DIR when that is set, and a new process
                        on the same directory finds it again: the harness kills the process (SIGKILL)
                        and checks what the store holds (corpus:sigkill; docs/protocol.md)
    "kill-points"       arm_kill(after_appends): die by SIGKILL once that many more appends are durable
    "security"          configure(config): strict mode and the signed resume authenticator
                        (spec/signing.md); resume(..., options) carries the proof and the
                        principal; parked_at_sequence(execution_id) (ADR 0117 D2, D3)
    "signing"           sign(claim): the implementation's approver side signs approvals in its own
                        proof format, which its authenticator verifies; the harness then sends its
                        proofs instead of spec/signing.md's (ADR 0117 D2; needs "security")
    "operation-binding" the authenticator verifies spec/signing.md section 10, beyond ADR 0117 D2: a
                        resumeAs's proof also signs the operation, its target flow and transformState,
                        and a re-created execution's (after erase) its incarnation; without it the
                        harness hands such approvals over in D2's bytes (needs "security")

An invariant that needs a feature the implementation lacks is reported
not-applicable, never passed. A method for an unsupported feature may raise
NotImplementedError; it will not be called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

JSON = Any


class Hello(BaseModel):
    """What an implementation says about itself."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    version: str
    eventSchema: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    features: list[str] = []


@dataclass(frozen=True)
class Outcome:
    """The result of an operation the kernel may refuse."""

    ok: bool
    error: str | None = None
    reason: str | None = None
    message: str = ""
    crashed: bool = False  # accepted, but the worker died while running the flow (a fault point fired)

    @classmethod
    def accepted(cls, crashed: bool = False) -> "Outcome":
        return cls(ok=True, crashed=crashed)

    @classmethod
    def refused(cls, error: str, reason: str, message: str = "") -> "Outcome":
        return cls(ok=False, error=error, reason=reason, message=message)

    def to_json(self) -> dict[str, JSON]:
        if self.ok:
            return {"ok": True, "crashed": True} if self.crashed else {"ok": True}
        return {"ok": False, "error": self.error, "reason": self.reason, "message": self.message}

    def short(self) -> str:
        if self.ok:
            return "ok, worker crashed" if self.crashed else "ok"
        return f"refused {self.reason}"


@runtime_checkable
class Driver(Protocol):
    def hello(self) -> Hello | dict[str, JSON]:
        """Name, version, EVENT_SCHEMA version and optional features."""
        ...

    def reset(self) -> None:
        """Forget every flow and execution: the next test case starts empty."""
        ...

    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        """Register a flow program (spec/schemas/flow-program.schema.json) under an id."""
        ...

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        """Start an execution of a registered flow, under an id the harness chooses,
        and run it until it parks or ends."""
        ...

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        """Answer the gate an execution is parked on with `{type, payload}`, then run
        the flow until it parks or ends. Refuse (appending nothing) when it must.
        `options` (feature "security"; the harness passes it only when it is not empty):
        `{"proof": {actor, exp, signature}, "principal": {actor}, "discardLegacyAnswers": {stepId, count}}`;
        with feature "signing", `proof` is the object the implementation's own `sign(claim)` returned."""
        ...

    def configure(self, config: dict[str, JSON]) -> Outcome:
        """Compose the runtime's security (feature "security"), keeping flows and executions:
        `{"strict": bool, "requireResumeAuthenticator": bool, "authenticator": {"gates": [...],
        "keys": {actor: secret | [secrets]}, "requireActor": bool} | absent}`. Refused
        (ConfigError) with strict-needs-authenticator or weak-secret, changing nothing."""
        ...

    def advance_clock(self, ms: int) -> list[str]:
        """Move the runtime's clock forward by `ms`; its timer service wakes every timed park
        now due, with the runtime's system grant. The ids woken (feature "timers")."""
        ...

    def parked_at_sequence(self, execution_id: str) -> int | None:
        """The seq of the EXECUTION_SUSPENDED the execution is parked at (what an approver
        signs), or None when it is not parked or the park is no longer retained (feature "security")."""
        ...

    def sign(self, claim: dict[str, JSON]) -> dict[str, JSON]:
        """Sign an approval as the implementation's approver side does, with the keys of the last
        accepted configure (feature "signing", ADR 0117 D2). `claim` is the whole event and the one
        park it answers: `{"executionId", "parkedAtSequence", "actor", "exp", "event": {"type",
        "payload"}, "discardLegacyAnswers": false | {stepId, count}, "operation": {"type": "resume"} |
        {"type": "resumeAs", "flowId", "transformState"}}`; `operation` is what the approval is for,
        beyond ADR 0117 D2 (spec/signing.md section 10), for a format that binds it (and the execution
        the implementation holds under the id now, which a re-created one is not). Returns `{"proof": {...}}`,
        any JSON object the implementation's authenticator accepts as `options["proof"]` of exactly
        that resume at exactly that park before `exp`, opaque to the harness; or, when the approver
        side will not sign it (an unknown actor, a payload it cannot serialise), the refusal as data:
        `{"refused": {"reason": str, "message": str}}`, never an exception."""
        ...

    def recover(self, execution_id: str) -> Outcome:
        """Re-drive an execution whose worker died while it was running (feature "recover")."""
        ...

    def recover_abandoned(self) -> list[str]:
        """Re-drive every crashed execution, skipping parked and finished ones; the ids
        re-driven (feature "recover")."""
        ...

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: dict[str, JSON] | None = None) -> Outcome:
        """Resume onto another registered flow (feature "resume-as"); `options` as for resume."""
        ...

    def restart(self) -> None:
        """Discard the runtime's memory and rebuild from the store (feature "restart")."""
        ...

    def effects(self, execution_id: str) -> list[dict[str, JSON]]:
        """Every execution of an effect so far, `{"stepId", "attempt"}`, in order
        (feature "effect-ledger"). The ledger is the outside world: it survives crashes."""
        ...

    def load(self, execution_id: str, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> Outcome:
        """Import a log as another kernel wrote it, optionally preceded by a folded
        snapshot (feature "load-log"). Nothing runs."""
        ...

    def warnings(self) -> list[dict[str, JSON]]:
        """Every warning the kernel's on_warn hook received since reset, in order:
        `{"executionId", "verdict": "passed" | "at-risk" | "unverifiable", ...}` (feature "legacy-scan")."""
        ...

    def append_events(self, execution_id: str, events: list[dict[str, JSON]]) -> Outcome:
        """Append `{type, payload}` events to an execution's log as another node of the
        fleet wrote them (an older kernel, say); nothing runs (feature "legacy-scan")."""
        ...

    def erase(self, execution_id: str) -> None:
        """Forget one execution, its events and snapshot (feature "legacy-scan")."""
        ...

    def truncate_prefix(self, execution_id: str, upto: int) -> Outcome:
        """Retention: keep the folded state as of `upto` as the snapshot and delete the
        events up to it (feature "retention")."""
        ...

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        """The execution's log: every retained event, oldest first."""
        ...

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        """The execution's folded state, as the kernel itself reads it."""
        ...

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        """Fold the given events from nothing (or from the snapshot) (feature "fold")."""
        ...

    def close(self) -> None:
        """Release resources (files, processes)."""
        ...
