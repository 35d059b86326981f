"""The permuted view: how the permuted reference (kernel.py) shows what a kernel writes, with
every choice the ADRs leave open made the other way, and how it hides it again. A stranger's
correct kernel differs from ours wherever the decisions are silent. What the view changes,
and why each is free:

- every refusal's message, and the free-text `message` inside an error object of a payload
  (refusals are data: typed error and reason; no ADR fixes a message);
- an extra field on every object payload the kernel writes itself (`node`), and one in every
  suspend condition (`parkedBy`): a kernel may keep more, and the fold copies a condition
  verbatim (ADR 0117 D1), so the folded `suspendedOn` carries it too;
- a started step's status is `running`, not `started`, and carries `output: null`; the answer
  list and latest answer read `[]` and `null` before the first answer, not absent;
- APPROVAL_GRANTED comes after the gate's own resume-typed event, not before it
  (ADR 0117 D2 says the evidence is recorded, not where);
- the other admissible reason where a decision admits two: recovering a finished execution is
  `not-suspended` (ADR 0104 D4's "Recovery of a parked execution ... not-suspended" is the same
  refusal; the reference says `terminal`), resuming one is `terminal` (the reference says
  `not-suspended`); an approval whose park is gone is `unauthenticated`
  (ADR 0117 D2: "Without a context (or an unparked execution) it rejects"; the reference says
  `park-not-located`);
- the authenticator's `verifiedBy` label;
- a view's digest, over a canonical JSON of its own (OwnDigestsDriver, below).

The view is a bijection on what the kernel writes: `_hide` undoes `_show` exactly, and only on
payloads carrying the wrapper's mark, so a log written elsewhere is passed on as it came.
"""

from __future__ import annotations

from typing import Any

JSON = Any

MARK = "permuted-1"
NODE = "node"            # the extra field on every object payload the kernel writes
PARKED_BY = "parkedBy"   # the extra field in every suspend condition
LABEL_OURS = "signedResumeAuthenticator"
LABEL_THEIRS = "permuted-hmac"
MESSAGE_PREFIX = "(permuted) "
STATUS_THEIRS = {"started": "running"}
STATUS_OURS = {v: k for k, v in STATUS_THEIRS.items()}
APPROVAL_GRANTED = "APPROVAL_GRANTED"
# Reasons with an admissible alternative, per operation: ours -> theirs (spec/profiles.toml).
REASONS = {"recover": {"terminal": "not-suspended"},
           "resume": {"park-not-located": "unauthenticated"},
           "resume_as": {"park-not-located": "unauthenticated"}}
FINISHED = ("completed", "failed", "cancelled")
# The kernel's own writes: the payloads that get the extra field. Application events, the
# caller's answers (the resume-typed event, EXECUTION_RESUMED), TIMER_FIRED (exactly {wakeAt},
# ADR 0117 D5) and what effect code emits are not the kernel's to change.
KERNEL_WRITTEN = frozenset({"EXECUTION_STARTED", "EXECUTION_SUSPENDED", "EXECUTION_COMPLETED", "EXECUTION_FAILED",
                            "EXECUTION_CANCELLED", "EXECUTION_MIGRATED", "STEP_STARTED", "STEP_COMPLETED",
                            "STEP_FAILED", "EFFECT_INDOUBT", APPROVAL_GRANTED, "EXECUTION_RECOVERED"})


def _kernel_type(event_type: Any) -> bool:
    from loomcheck.spec.vocabulary import kernel_event_types

    return isinstance(event_type, str) and event_type in kernel_event_types()


def message_out(text: Any) -> Any:
    return MESSAGE_PREFIX + text[::-1] if isinstance(text, str) else text


def _message_in(text: Any) -> Any:
    return text[len(MESSAGE_PREFIX):][::-1] if isinstance(text, str) and text.startswith(MESSAGE_PREFIX) else text


def _error_out(error: Any) -> Any:
    if not isinstance(error, dict):
        return error
    shown = {**error, NODE: MARK}
    if "message" in shown:
        shown["message"] = message_out(shown["message"])
    return shown


def _error_in(error: Any) -> Any:
    if not isinstance(error, dict) or error.get(NODE) != MARK:
        return error
    hidden = {k: v for k, v in error.items() if k != NODE}
    if "message" in hidden:
        hidden["message"] = _message_in(hidden["message"])
    return hidden


def _condition_out(condition: Any) -> Any:
    return {**condition, PARKED_BY: MARK} if isinstance(condition, dict) else condition


def _condition_in(condition: Any) -> Any:
    if isinstance(condition, dict) and condition.get(PARKED_BY) == MARK:
        return {k: v for k, v in condition.items() if k != PARKED_BY}
    return condition


def _approval_out(evidence: Any) -> Any:
    if not isinstance(evidence, dict):
        return evidence
    shown = {**evidence, NODE: MARK}
    if shown.get("verifiedBy") == LABEL_OURS:
        shown["verifiedBy"] = LABEL_THEIRS
    return shown


def _approval_in(evidence: Any) -> Any:
    if not isinstance(evidence, dict) or evidence.get(NODE) != MARK:
        return evidence
    hidden = {k: v for k, v in evidence.items() if k != NODE}
    if hidden.get("verifiedBy") == LABEL_THEIRS:
        hidden["verifiedBy"] = LABEL_OURS
    return hidden


def _kernel_decision(event_type: str, payload: Any) -> bool:
    return event_type == "DECISION_RECORDED" and isinstance(payload, dict) \
        and str(payload.get("decisionId", "")).startswith("__loom_")


def show_payload(event_type: str, payload: Any) -> Any:
    """A payload as the permuted kernel writes it."""
    if not isinstance(payload, dict):
        return payload
    if _kernel_decision(event_type, payload):
        shown = {**payload, NODE: MARK}
        approval = (payload.get("rationale") or {}).get("approval") if isinstance(payload.get("rationale"), dict) else None
        if approval is not None:
            shown["rationale"] = {**payload["rationale"], "approval": _approval_out(approval)}
        return shown
    if event_type not in KERNEL_WRITTEN:
        return payload
    if event_type == APPROVAL_GRANTED:
        return _approval_out(payload)
    shown = {**payload, NODE: MARK}
    if event_type == "EXECUTION_SUSPENDED" and "condition" in shown:
        shown["condition"] = _condition_out(shown["condition"])
    if event_type in ("EXECUTION_FAILED", "STEP_FAILED") and "error" in shown:
        shown["error"] = _error_out(shown["error"])
    return shown


def hide_payload(event_type: str, payload: Any) -> Any:
    """`show_payload` undone; a payload without the mark is passed on as it came."""
    if not isinstance(payload, dict) or payload.get(NODE) != MARK:
        return payload
    if event_type == APPROVAL_GRANTED:
        return _approval_in(payload)
    hidden = {k: v for k, v in payload.items() if k != NODE}
    if event_type == "EXECUTION_SUSPENDED" and "condition" in hidden:
        hidden["condition"] = _condition_in(hidden["condition"])
    if event_type in ("EXECUTION_FAILED", "STEP_FAILED") and "error" in hidden:
        hidden["error"] = _error_in(hidden["error"])
    rationale = hidden.get("rationale")
    if event_type == "DECISION_RECORDED" and isinstance(rationale, dict) and "approval" in rationale:
        hidden["rationale"] = {**rationale, "approval": _approval_in(rationale["approval"])}
    return hidden


def _granted_before_answer(events: list[dict], index: int) -> bool:
    return (events[index].get("type") == APPROVAL_GRANTED and index + 1 < len(events)
            and not _kernel_type(events[index + 1].get("type")))


def _swap(events: list[dict], index: int) -> None:
    first, second = events[index], events[index + 1]
    events[index] = {**second, "seq": first.get("seq")}
    events[index + 1] = {**first, "seq": second.get("seq")}


def show_log(events: list[dict]) -> list[dict]:
    """A log as the permuted kernel writes it: payloads shown, and APPROVAL_GRANTED after the
    resume-typed event of the gate it approves rather than before it."""
    shown = [{**e, "payload": show_payload(e.get("type"), e.get("payload"))} if isinstance(e, dict) else e
             for e in events]
    index = 0
    while index < len(shown) - 1:
        if isinstance(shown[index], dict) and isinstance(shown[index + 1], dict) and _granted_before_answer(shown, index):
            _swap(shown, index)
            index += 2
        else:
            index += 1
    return shown


def hide_log(events: Any) -> Any:
    """`show_log` undone, for what the harness hands the kernel (fold, load, append)."""
    if not isinstance(events, list):
        return events
    hidden = list(events)
    index = 0
    while index < len(hidden) - 1:
        first, second = hidden[index], hidden[index + 1]
        if (isinstance(first, dict) and isinstance(second, dict) and second.get("type") == APPROVAL_GRANTED
                and isinstance(second.get("payload"), dict) and second["payload"].get(NODE) == MARK
                and not _kernel_type(first.get("type"))):
            _swap(hidden, index)
            index += 2
        else:
            index += 1
    return [{**e, "payload": hide_payload(e.get("type"), e.get("payload"))}
            if isinstance(e, dict) and "payload" in e else e for e in hidden]


def show_state(state: Any) -> Any:
    """A folded state as the permuted kernel reads it: consistent with folding `show_log`."""
    if not isinstance(state, dict):
        return state
    shown = dict(state)
    if isinstance(shown.get("suspendedOn"), dict):
        shown["suspendedOn"] = _condition_out(shown["suspendedOn"])
    if "error" in shown:
        shown["error"] = _error_out(shown["error"])
    variables = shown.get("variables")
    if isinstance(variables, dict):
        variables = dict(variables)
        if "_resumePayloads" not in variables and "_resumePayload" not in variables:
            variables["_resumePayloads"], variables["_resumePayload"] = [], None
        if isinstance(variables.get("_approvals"), list):
            variables["_approvals"] = [_approval_out(a) for a in variables["_approvals"]]
        shown["variables"] = variables
    steps = shown.get("steps")
    if isinstance(steps, dict):
        shown["steps"] = {step: _frame_out(frame) for step, frame in steps.items()}
    return shown


def hide_state(state: Any) -> Any:
    """`show_state` undone, for a snapshot the harness hands the kernel."""
    if not isinstance(state, dict):
        return state
    hidden = dict(state)
    if isinstance(hidden.get("suspendedOn"), dict):
        hidden["suspendedOn"] = _condition_in(hidden["suspendedOn"])
    if "error" in hidden:
        hidden["error"] = _error_in(hidden["error"])
    variables = hidden.get("variables")
    if isinstance(variables, dict):
        variables = dict(variables)
        if variables.get("_resumePayloads") == [] and "_resumePayload" in variables and variables["_resumePayload"] is None:
            del variables["_resumePayloads"], variables["_resumePayload"]
        if isinstance(variables.get("_approvals"), list):
            variables["_approvals"] = [_approval_in(a) for a in variables["_approvals"]]
        hidden["variables"] = variables
    steps = hidden.get("steps")
    if isinstance(steps, dict):
        hidden["steps"] = {step: _frame_in(frame) for step, frame in steps.items()}
    return hidden


def _frame_out(frame: Any) -> Any:
    if not isinstance(frame, dict):
        return frame
    shown = dict(frame)
    if shown.get("status") in STATUS_THEIRS:
        shown["status"] = STATUS_THEIRS[shown["status"]]
        shown.setdefault("output", None)
    if "error" in shown:
        shown["error"] = _error_out(shown["error"])
    return shown


def _frame_in(frame: Any) -> Any:
    if not isinstance(frame, dict):
        return frame
    hidden = dict(frame)
    if hidden.get("status") in STATUS_OURS:
        hidden["status"] = STATUS_OURS[hidden["status"]]
        if hidden.get("output", 0) is None:
            del hidden["output"]
    if "error" in hidden:
        hidden["error"] = _error_in(hidden["error"])
    return hidden
