"""The fold: a pure function from events to state, one handler per event type looked up as
an own key only, so a type string an outsider sends (`__proto__`, `get`) folds as a no-op (ADR
0077, "A prototype-chain bug this surfaced"). Handlers read payload fields defensively: a log
written elsewhere may carry any JSON, and the fold must not crash on it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable, Iterable, Mapping

from loomcheck.reference.events import JSON, Event, copy_json

from loomcheck.spec.names import IN_DOUBT_GATE
TERMINAL = frozenset({"completed", "failed", "cancelled"})


@dataclass(slots=True)
class State:
    sequence: int = 0
    status: str = "pending"
    flow_id: str | None = None
    version: str | None = None      # the code version the execution is pinned to (K11), if its log records one
    suspended_on: dict[str, JSON] | None = None
    variables: dict[str, JSON] = field(default_factory=dict)
    steps: dict[str, dict[str, JSON]] = field(default_factory=dict)
    output: JSON = None
    error: JSON = None

    def to_json(self) -> dict[str, JSON]:
        return {
            "sequence": self.sequence,
            "status": self.status,
            "flowId": self.flow_id,
            "codeVersion": self.version,
            "suspendedOn": copy_json(self.suspended_on),
            "variables": copy_json(self.variables),
            "steps": copy_json(self.steps),
            "output": copy_json(self.output),
            "error": copy_json(self.error),
        }

    def copy(self) -> "State":
        """A deep copy, without recursion past copy_json's first levels (copy.deepcopy's
        recursion would overflow on a deep snapshot)."""
        return replace(self, suspended_on=copy_json(self.suspended_on), variables=copy_json(self.variables),
                       steps=copy_json(self.steps), output=copy_json(self.output), error=copy_json(self.error))

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> "State":
        """A state from a snapshot; missing keys take their empty values."""
        data = copy_json(dict(data))
        suspended_on = data.get("suspendedOn")
        return cls(
            sequence=int(data.get("sequence") or 0),
            status=str(data.get("status") or "pending"),
            flow_id=data.get("flowId"),
            version=data.get("codeVersion") if isinstance(data.get("codeVersion"), str) else None,
            suspended_on=suspended_on if isinstance(suspended_on, dict) else None,
            variables=data.get("variables") if isinstance(data.get("variables"), dict) else {},
            steps=data.get("steps") if isinstance(data.get("steps"), dict) else {},
            output=data.get("output"),
            error=data.get("error"),
        )

    @property
    def parked_on(self) -> str | None:
        """The gate name the execution is parked on, if it is parked."""
        if self.status != "suspended" or not self.suspended_on:
            return None
        on = self.suspended_on.get("on")
        return on if isinstance(on, str) else None


Handler = Callable[[State, JSON], None]


def _field(payload: JSON, key: str) -> JSON:
    return payload.get(key) if isinstance(payload, dict) else None


def _started(state: State, payload: JSON) -> None:
    state.status = "running"
    flow_id = _field(payload, "flowId")
    state.flow_id = flow_id if isinstance(flow_id, str) else None
    version = _field(payload, "version")
    state.version = version if isinstance(version, str) else None  # ADR 0056 Context: pinned to its code (K11)
    state.variables["_input"] = copy_json(_field(payload, "input"))


def _suspended(state: State, payload: JSON) -> None:
    condition = _field(payload, "condition")
    state.status = "suspended"
    # ADR 0117 D1: the condition is copied verbatim, so a gate's viewDigest is fold-visible.
    state.suspended_on = copy_json(condition) if isinstance(condition, dict) else {}


def answers_no_suspend_point(state: State, payload: JSON) -> bool:
    """ADR 0104 D3: a null resume while not parked, or parked in doubt, is status-only."""
    if payload is not None:
        return False
    return state.status != "suspended" or state.parked_on == IN_DOUBT_GATE


def _resumed(state: State, payload: JSON) -> None:
    status_only = answers_no_suspend_point(state, payload)
    state.status = "running"
    state.suspended_on = None
    if status_only:  # ADR 0104 D3: a null that answers no suspend point is status-only
        return
    entry = copy_json(payload)
    # ADR 0057 Decision: the ordered list, append-only; the single latest key is kept for compatibility.
    state.variables.setdefault("_resumePayloads", []).append(entry)
    state.variables["_resumePayload"] = copy_json(entry)


def _completed(state: State, payload: JSON) -> None:
    state.status = "completed"
    state.output = copy_json(_field(payload, "output"))


def _failed(state: State, payload: JSON) -> None:
    state.status = "failed"
    state.error = copy_json(_field(payload, "error"))


def _cancelled(state: State, payload: JSON) -> None:
    state.status = "cancelled"


def _migrated(state: State, payload: JSON) -> None:
    to_flow = _field(payload, "toFlow")
    if isinstance(to_flow, str):
        state.flow_id = to_flow  # the execution now runs on the target flow's code
    to_version = _field(payload, "toVersion")
    state.version = to_version if isinstance(to_version, str) else None  # ADR 0056 Context: pinned (K11)
    entry: dict[str, JSON] = {"fromFlow": copy_json(_field(payload, "fromFlow")), "toFlow": copy_json(to_flow),
                              "fromVersion": copy_json(_field(payload, "fromVersion")),
                              "toVersion": copy_json(to_version)}
    if isinstance(payload, dict) and "migratedInput" in payload:
        # ADR 0056 D2: the fold replaces _input; every resume path reads it.
        state.variables["_input"] = copy_json(payload["migratedInput"])
        entry["stateMigrated"] = True
    state.variables.setdefault("_migrations", []).append(entry)


def _step_id(payload: JSON) -> str | None:
    step_id = _field(payload, "stepId")
    return step_id if isinstance(step_id, str) else None


def _step_started(state: State, payload: JSON) -> None:
    step_id = _step_id(payload)
    if step_id is None:
        return
    attempt = _field(payload, "attempt")
    frame = state.steps.setdefault(step_id, {})
    frame["status"] = "started"
    frame["attempt"] = attempt if isinstance(attempt, int) else int(frame.get("attempt") or 0) + 1


def _step_completed(state: State, payload: JSON) -> None:
    step_id = _step_id(payload)
    if step_id is None:
        return
    frame = state.steps.setdefault(step_id, {"attempt": 1})
    frame["status"] = "completed"
    frame["output"] = copy_json(_field(payload, "output"))


def _step_failed(state: State, payload: JSON) -> None:
    step_id = _step_id(payload)
    if step_id is None:
        return
    frame = state.steps.setdefault(step_id, {"attempt": 1})
    frame["status"] = "failed"
    frame["error"] = copy_json(_field(payload, "error"))


def _effect_in_doubt(state: State, payload: JSON) -> None:
    step_id = _step_id(payload)
    if step_id is None:
        return
    attempt = _field(payload, "attempt")
    state.steps.setdefault(step_id, {"attempt": 1})["inDoubtAttempt"] = copy_json(attempt)


def _decision(state: State, payload: JSON) -> None:
    decision_id = _field(payload, "decisionId")
    if isinstance(decision_id, str):
        state.variables.setdefault("_decisions", {})[decision_id] = copy_json(_field(payload, "choice"))


def _approval(state: State, payload: JSON) -> None:
    state.variables.setdefault("_approvals", []).append(copy_json(payload))


METER_FIELDS = ("tokens", "costUsd", "ms", "wallMs", "memBytes", "netBytes")


def _metered(state: State, payload: JSON) -> None:
    resources = state.variables.setdefault("_resources", {})
    for name in METER_FIELDS:
        value = _field(payload, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        try:
            total = resources.get(name, 0) + value
            if math.isfinite(total):  # a sum that leaves JSON's numbers is dropped, never folded
                resources[name] = total
        except OverflowError:  # an integer too large for a float (JSON allows it)
            continue


def _quota(state: State, payload: JSON) -> None:
    state.variables.setdefault("_resources", {})["exceeded"] = True


def _audit(state: State, payload: JSON) -> None:
    state.variables.setdefault("_audit", []).append(copy_json(payload))


# The kernel namespace is exactly these keys (pinned against spec/events.toml).
HANDLERS: Mapping[str, Handler] = MappingProxyType({
    "EXECUTION_STARTED": _started,
    "EXECUTION_SUSPENDED": _suspended,
    "EXECUTION_RESUMED": _resumed,
    "EXECUTION_COMPLETED": _completed,
    "EXECUTION_FAILED": _failed,
    "EXECUTION_CANCELLED": _cancelled,
    "EXECUTION_MIGRATED": _migrated,
    "STEP_STARTED": _step_started,
    "STEP_COMPLETED": _step_completed,
    "STEP_FAILED": _step_failed,
    "EFFECT_INDOUBT": _effect_in_doubt,
    "DECISION_RECORDED": _decision,
    "APPROVAL_GRANTED": _approval,
    "RESOURCE_METERED": _metered,
    "QUOTA_EXCEEDED": _quota,
    "SAFETY_BLOCKED": _audit,
    "EGRESS_DENIED": _audit,
    "EFFECT_DENIED": _audit,
    "OUTCOME_RECORDED": _audit,
})


def handler_for(event_type: str, handlers: Mapping[str, Handler] = HANDLERS) -> Handler | None:
    """Own entries only: never an attribute, never an inherited name."""
    # ADR 0077 Prototype-chain bug: a caller's type string finds an own entry or none.
    return handlers.get(event_type) if type(event_type) is str else None


def apply(state: State, event: Event, handlers: Mapping[str, Handler] = HANDLERS) -> None:
    handler = handler_for(event.type, handlers)
    if handler is not None:
        handler(state, event.payload)
    state.sequence = event.seq


def fold(events: Iterable[Event], snapshot: State | None = None, handlers: Mapping[str, Handler] = HANDLERS) -> State:
    """`handlers` is a seam for the project's seeded mutants; kernels use the default.
    `events` may be any iterable (a store's paged stream), so a long log is never held whole."""
    state = snapshot.copy() if snapshot is not None else State()
    table = dict(handlers)  # a plain dict's lookup is cheaper than a MappingProxyType's, once per event
    for event in events:
        apply(state, event, table)
    return state
