"""The driver interface: the one way every check talks to an implementation (`Driver`, with
`Hello` and `Outcome`). What crosses it, each method and each feature: docs/driver.md."""

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
