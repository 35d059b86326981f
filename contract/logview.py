"""Reading a log as the spec describes it, independently of any kernel: which
EXECUTION_RESUMED events became answer entries (ADR 0057, with ADR 0104 D3),
where the execution was parked, and what each gate observed.

This is a second implementation of the fold's answer rule, written from the
ADRs, so the predicates do not trust the kernel (or the reference) they check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from loomcheck.spec.names import IN_DOUBT_GATE, OBSERVED_EVENT
from loomcheck.spec.versions import pinned_version

JSON = Any
IN_DOUBT = IN_DOUBT_GATE
TERMINAL = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class Entry:
    index: int
    seq: int | None      # the EXECUTION_RESUMED that created it (None: from a snapshot)
    payload: JSON
    parked_on: str | None = None      # the gate it was recorded at (None: not parked, or unknown)
    parked_step: str | None = None    # that park's condition.stepId, if any


@dataclass(frozen=True)
class Moment:
    """The execution as of just before an event."""

    status: str
    parked_on: str | None
    entries: int
    condition: dict | None = None     # the parking condition, verbatim


def _base(snapshot: dict[str, JSON] | None) -> tuple[list[Entry], JSON, bool]:
    """From a snapshot: the folded answer list, the legacy single answer, and
    whether the snapshot is pre-1.16 (a `_resumePayload` but no list)."""
    variables = (snapshot or {}).get("variables") or {}
    folded = variables.get("_resumePayloads")
    if isinstance(folded, list):
        return [Entry(i, None, p) for i, p in enumerate(folded)], None, False
    if "_resumePayload" in variables:
        return [], variables["_resumePayload"], True
    return [], None, False


def walk(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None) -> Iterator[tuple[dict[str, JSON], Moment, Entry | None]]:
    """Yield each event with the moment before it and the entry it created, if any."""
    status = str((snapshot or {}).get("status") or "pending")
    condition = (snapshot or {}).get("suspendedOn")
    condition = condition if status == "suspended" and isinstance(condition, dict) else None
    parked_on = condition.get("on") if condition else None
    base, _, legacy = _base(snapshot)
    folded = len(base)
    for event in log:
        # The context serves the folded list; a pre-1.16 snapshot with no list yet serves its one answer (ADR 0057).
        served = folded if (folded or not legacy) else 1
        moment = Moment(status, parked_on, served, condition)
        created = None
        kind, payload = event.get("type"), event.get("payload")
        if kind == "EXECUTION_STARTED":
            status, parked_on, condition = "running", None, None
        elif kind == "EXECUTION_SUSPENDED":
            status = "suspended"
            cond = payload.get("condition") if isinstance(payload, dict) else None
            condition = cond if isinstance(cond, dict) else {}
            parked_on = condition.get("on")
        elif kind == "EXECUTION_RESUMED":
            # ADR 0104 D3: a null resume that answers no suspend point is status-only.
            status_only = payload is None and (status != "suspended" or parked_on == IN_DOUBT)
            if not status_only:
                step = condition.get("stepId") if condition else None
                created = Entry(folded, event.get("seq"), payload, parked_on if status == "suspended" else None,
                                step if isinstance(step, str) else None)
                folded += 1
            status, parked_on, condition = "running", None, None
        elif kind == "EXECUTION_COMPLETED":
            status = "completed"
        elif kind == "EXECUTION_FAILED":
            status = "failed"
        elif kind == "EXECUTION_CANCELLED":
            status = "cancelled"
        yield event, moment, created


def entries_of(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None) -> list[Entry]:
    """What the fold's `_resumePayloads` holds after the log."""
    found, _, _ = _base(snapshot)
    found.extend(entry for _, _, entry in walk(log, snapshot) if entry is not None)
    return found


def served_answers(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None, before_seq: int) -> list[Entry]:
    """The answers a run that starts before event `before_seq` serves to its gates,
    in order: the folded list, or a pre-1.16 snapshot's single answer."""
    base, legacy_answer, legacy = _base(snapshot)
    created = [entry for event, _, entry in walk(log, snapshot) if entry is not None and entry.seq < before_seq]
    if legacy and not created:
        return [Entry(0, None, legacy_answer)]
    return base + created


def final_moment(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None) -> Moment:
    """The execution as of the end of the log."""
    sentinel = {"seq": None, "type": "", "payload": None}
    moment = None
    for _, moment, _ in walk([*log, sentinel], snapshot):
        pass
    assert moment is not None
    return moment


@dataclass(frozen=True)
class Observation:
    seq: int
    gate: int
    on: str | None
    value: JSON


def observations(log: list[dict[str, JSON]]) -> list[Observation]:
    found = []
    for event in log:
        payload = event.get("payload")
        if event.get("type") == OBSERVED_EVENT and isinstance(payload, dict) and isinstance(payload.get("gate"), int):
            found.append(Observation(event["seq"], payload["gate"], payload.get("on"), payload.get("value")))
    return found


def flow_id_of(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None) -> str | None:
    """The flow an execution runs now: its start's, or its latest migration's target."""
    flow_id = (snapshot or {}).get("flowId")
    for event in log:
        payload = event.get("payload")
        if not isinstance(payload, dict):
            continue
        if event.get("type") == "EXECUTION_STARTED":
            flow_id = payload.get("flowId")
        elif event.get("type") == "EXECUTION_MIGRATED" and isinstance(payload.get("toFlow"), str):
            flow_id = payload["toFlow"]
    return flow_id if isinstance(flow_id, str) else None


def migrated(log: list[dict[str, JSON]]) -> bool:
    """True once resumeAs moved the execution onto another flow. Its target may
    rename or reshape the suspend points (ADR 0104 D1: the resume names the
    RECORDED gate), so checks that match answers to the flow's gates by position
    and name judge only executions still on the flow they started."""
    return any(event.get("type") == "EXECUTION_MIGRATED" for event in log)


def condition_of(event: dict[str, JSON]) -> dict[str, JSON]:
    payload = event.get("payload")
    cond = payload.get("condition") if isinstance(payload, dict) else None
    return cond if isinstance(cond, dict) else {}


# -- ADR 0117 at the ingress ------------------------------------------------------
TIMER = "TIMER_FIRED"
# Refusals of a resume that names the parked gate, judged by the approvals.* predicates.
BINDING_REFUSALS = ("view-digest-mismatch", "unauthenticated", "park-not-located", "timer-wake-not-system")


def timed(moment: Moment) -> bool:
    return isinstance(moment.condition, dict) and "wakeAt" in moment.condition


def answers_gate(moment: Moment, event_type: str) -> bool:
    """A resume of this type names the gate the execution is parked on: its name, or
    TIMER_FIRED at a timed park (ADR 0117 D5: a timed gate has two legitimate wakes)."""
    if moment.status != "suspended":
        return False
    return event_type == moment.parked_on or (event_type == TIMER and timed(moment))


def timer_wake(moment: Moment, event_type: str) -> bool:
    return event_type == TIMER and moment.status == "suspended" and timed(moment)


def without_grant(events: list[dict[str, JSON]]) -> list[dict[str, JSON]]:
    """The events an answer appended, without the APPROVAL_GRANTED evidence an
    authenticator records before it (ADR 0117 D2), which approvals.* judge."""
    return [e for e in events if e.get("type") != "APPROVAL_GRANTED"]


def park_seq(log: list[dict[str, JSON]]) -> int | None:
    """The seq of the newest EXECUTION_SUSPENDED in the log: the park an approval answers
    (ADR 0117 Round 2), which is not the folded tip. None when the log holds none."""
    return max((e["seq"] for e in log if e.get("type") == "EXECUTION_SUSPENDED" and isinstance(e.get("seq"), int)),
               default=None)


# -- K11: code versions --------------------------------------------------------------
def code_changed(registered: dict[str, str | None], log: list[dict[str, JSON]],
                 snapshot: dict[str, JSON] | None = None) -> bool:
    """The execution is pinned to a code version other than the one registered for
    its flow now (spec/versions.py): a plain resume or recovery must be refused
    code-mismatch, so no answer, verdict or wake is due."""
    pinned = pinned_version(log, snapshot)
    now = registered.get(flow_id_of(log, snapshot) or "")
    return pinned is not None and now is not None and pinned != now
