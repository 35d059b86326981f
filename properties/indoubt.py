"""ADR 0104 D1, in doubt: a non-idempotent attempt that may have acted parks for
an operator's verdict, keyed by attempt; the verdict is a decision, never an
entry; the effect never runs twice for one attempt."""

from __future__ import annotations

from typing import Any, Iterator

from loomcheck.contract.script import Recover, RecoverAbandoned, Resume, ResumeAs, Start
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.steps import fresh, logs_touched
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import IN_DOUBT, code_changed, entries_of, final_moment, flow_id_of
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.names import INDOUBT_DECISION_PREFIX

VERDICTS = ("succeeded", "failed", "retry-fresh")
DRIVES = (Start, Resume, ResumeAs, Recover)


def is_verdict_for(payload: Any, step_id: Any) -> bool:
    return isinstance(payload, dict) and payload.get("stepId") == step_id and payload.get("resolution") in VERDICTS


def decision_id(step_id: str, attempt: int) -> str:
    return f"{INDOUBT_DECISION_PREFIX}:{step_id}:{attempt}"


def _payload(event: dict) -> dict:
    payload = event.get("payload")
    return payload if isinstance(payload, dict) else {}


def verdict_before(log: list[dict], upto: int, step_id: str, attempt: int) -> dict | None:
    """The verdict for (step, attempt) recorded before index `upto`: the kernel's
    decision, or a pre-0104 verdict entry recorded after that attempt's EFFECT_INDOUBT."""
    found = None
    in_doubt_seen = False
    for event in log[:upto]:
        payload = _payload(event)
        if event.get("type") == "DECISION_RECORDED" and payload.get("decisionId") == decision_id(step_id, attempt):
            found = payload.get("choice")
        elif event.get("type") == "EFFECT_INDOUBT" and payload.get("stepId") == step_id:
            in_doubt_seen = payload.get("attempt") == attempt
        elif event.get("type") == "EXECUTION_RESUMED" and in_doubt_seen and is_verdict_for(event.get("payload"), step_id):
            found = found or event.get("payload")
    return found if is_verdict_for(found, step_id) else None


def non_idempotent_steps(trace: Trace, log: list[dict], execution: str) -> set[str]:
    flow = trace.flows.get(flow_id_of(log, trace.snapshots.get(execution)) or "")
    return {op.id for op in flow.calls() if getattr(op, "kind", None) == "non-idempotent"} if flow else set()


def _started_seq(log: list[dict], step_id: Any, attempt: Any) -> int | None:
    return next((e.get("seq") for e in log if e.get("type") == "STEP_STARTED" and _payload(e).get("stepId") == step_id
                 and _payload(e).get("attempt") == attempt), None)


def _verdict_seq(log: list[dict], step_id: str, attempt: int) -> int | None:
    """The event that recorded the verdict for (step, attempt): the kernel's decision, or a pre-0104 entry."""
    for position in range(1, len(log) + 1):
        if verdict_before(log, position, step_id, attempt):
            return log[position - 1].get("seq")
    return None


def attempts(log: list[dict], step_id: str) -> dict[int, str]:
    """attempt -> "started" | "completed" | "failed", from the log."""
    found: dict[int, str] = {}
    current = None
    for event in log:
        payload = _payload(event)
        if payload.get("stepId") != step_id:
            continue
        if event.get("type") == "STEP_STARTED" and isinstance(payload.get("attempt"), int):
            current = payload["attempt"]
            found[current] = "started"
        elif event.get("type") in ("STEP_COMPLETED", "STEP_FAILED") and current is not None:
            found[current] = "completed" if event["type"] == "STEP_COMPLETED" else "failed"
    return found


@predicate("indoubt.verdict-is-a-decision")
def verdicts_are_decisions(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, (Resume, ResumeAs)) or not step.outcome.ok:
        return
    snapshot = trace.snapshots.get(step.execution or "")
    before = final_moment(step.log_before, snapshot)
    if before.parked_on != IN_DOUBT:
        return
    cond = before.condition or {}
    added = fresh(step)
    if isinstance(step.op, ResumeAs):
        added = added[1:]
    expected_id = decision_id(str(cond.get("stepId")), int(cond.get("attempt") or 1))
    kinds = [(e.get("type"), _payload(e).get("decisionId")) for e in added[:3]]
    good = (len(added) >= 3 and added[0].get("type") == step.op.type
            and added[1].get("type") == "DECISION_RECORDED" and _payload(added[1]).get("decisionId") == expected_id
            and json_equal(_payload(added[1]).get("choice"), step.op.payload) and _payload(added[1]).get("source") == "operator"
            and added[2].get("type") == "EXECUTION_RESUMED" and added[2].get("payload") is None)
    if not good:
        yield Violation("indoubt.verdict-is-a-decision",
                        f"the verdict {show(step.op.payload, 50)} for {expected_id} was recorded as {kinds}; ADR 0104 D1 "
                        f"records the resume-typed event, DECISION_RECORDED {{{expected_id}, source: operator}}, then "
                        f"EXECUTION_RESUMED(null).", tuple(e.get("seq") for e in added[:3]))
    elif len(entries_of(step.log_after, snapshot)) != len(entries_of(step.log_before, snapshot)):
        yield Violation("indoubt.verdict-is-a-decision", f"the verdict for {expected_id} added an answer entry.")


@predicate("indoubt.non-verdict-refused")
def non_verdicts_are_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, (Resume, ResumeAs)) or step.op.type != IN_DOUBT:
        return
    before = final_moment(step.log_before, trace.snapshots.get(step.execution or ""))
    if before.parked_on != IN_DOUBT:
        return
    step_id = (before.condition or {}).get("stepId")
    if isinstance(step.op, Resume) and step.outcome.reason == "code-mismatch" and code_changed(
            trace.registered, step.log_before, trace.snapshots.get(step.op.execution)):
        return  # refused for its redeployed code first: version.pinned judges that
    if not is_verdict_for(step.op.payload, step_id) and step.outcome.reason != "not-a-verdict":
        yield Violation("indoubt.non-verdict-refused",
                        f"{show(step.op.payload, 50)} is not a verdict for the parked step {step_id!r}, and it got "
                        f"{step.outcome.short()}, not refused not-a-verdict.", tuple(e.get("seq") for e in fresh(step)[:3]))


def attempt_violations(step: Step, trace: Trace, invariant: str) -> Iterator[Violation]:
    drove = (isinstance(step.op, DRIVES) and step.outcome.ok) or isinstance(step.op, RecoverAbandoned)
    for execution, before, after in logs_touched(step):
        steps = non_idempotent_steps(trace, after, execution)
        for index in range(len(before), len(after)):
            event = after[index]
            payload = _payload(event)
            if event.get("type") != "STEP_STARTED" or payload.get("stepId") not in steps:
                continue
            attempt = payload.get("attempt")
            # Only an attempt that never finished is in doubt: one that recorded STEP_FAILED (and
            # was re-opened, by a resumeAs say) may be followed by a fresh attempt (ADR 0104 D1).
            finished = attempts(after[:index], payload["stepId"]).get(attempt - 1) in ("completed", "failed") \
                if isinstance(attempt, int) else False
            if isinstance(attempt, int) and attempt > 1 and not finished:
                verdict = verdict_before(after, index, payload["stepId"], attempt - 1)
                if verdict is None or verdict.get("resolution") != "retry-fresh":
                    yield Violation(invariant,
                                    f"#{event['seq']} started attempt {attempt} of the non-idempotent step "
                                    f"{payload['stepId']!r} with no retry-fresh verdict for attempt {attempt - 1}: its "
                                    f"effect may now run twice.", (event["seq"],))
                    return
        if not drove or step.outcome.crashed or (isinstance(step.op, RecoverAbandoned) and after == before):
            continue
        if flow_id_of(before, trace.snapshots.get(execution)) != flow_id_of(after, trace.snapshots.get(execution)):
            continue
        for step_id in sorted(steps):
            open_attempts = [k for k, s in attempts(before, step_id).items() if s == "started"]
            if not open_attempts:
                continue
            k = max(open_attempts)
            if attempts(after, step_id).get(k) != "started" or verdict_before(after, len(after), step_id, k):
                continue
            marked = any(e.get("type") == "EFFECT_INDOUBT" and _payload(e).get("stepId") == step_id
                         and _payload(e).get("attempt") == k for e in after)  # fields a kernel adds are its own
            parked = final_moment(after, trace.snapshots.get(execution))
            cond = parked.condition or {}
            if not marked or parked.parked_on != IN_DOUBT or cond.get("stepId") != step_id or cond.get("attempt") != k:
                yield Violation(invariant,
                                f"attempt {k} of the non-idempotent step {step_id!r} started and never finished; re-driven, "
                                f"it must record EFFECT_INDOUBT {{{step_id}, {k}}} and park on {IN_DOUBT} for that attempt "
                                f"(the log {'has' if marked else 'lacks'} the EFFECT_INDOUBT; the execution is "
                                f"{parked.status}{' on ' + repr(parked.parked_on) if parked.parked_on else ''}).",
                                tuple(e.get("seq") for e in after[len(before):][-2:]))


@predicate("indoubt.parks-per-attempt")
def unfinished_attempts_park(step: Step, trace: Trace) -> Iterator[Violation]:
    yield from attempt_violations(step, trace, "indoubt.parks-per-attempt")


@predicate("indoubt.legacy-verdict")
def legacy_verdicts_go_stale(step: Step, trace: Trace) -> Iterator[Violation]:
    """The same rules, on executions whose log holds a verdict an older kernel wrote as an entry."""
    for execution, _, after in logs_touched(step):
        entries = entries_of(after, trace.snapshots.get(execution))
        if any(isinstance(e.payload, dict) and e.payload.get("resolution") in VERDICTS for e in entries):
            yield from attempt_violations(step, trace, "indoubt.legacy-verdict")
            return


@predicate("indoubt.effect-once-per-attempt")
def effects_run_once(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.effects_after is None or step.execution is None:
        return
    steps = non_idempotent_steps(trace, step.log_after, step.execution)
    seen: set[tuple[Any, Any]] = set()
    for effect in step.effects_after:
        key = (effect.get("stepId"), effect.get("attempt"))
        if key[0] not in steps:
            continue
        if key in seen:
            start = _started_seq(step.log_after, key[0], key[1])
            yield Violation("indoubt.effect-once-per-attempt",
                            f"the effect of the non-idempotent step {key[0]!r} ran twice for attempt {key[1]}"
                            + (f" (started at #{start})." if start else "."),
                            (start,) if start else (),
                            (f"the start of attempt {key[1]}, whose effect the effects journal shows running twice",),
                            "each attempt of a non-idempotent step runs its effect at most once (ADR 0104 D1)")
            return
        seen.add(key)
        recorded = attempts(step.log_after, key[0])
        if key[1] not in recorded:
            yield Violation("indoubt.effect-once-per-attempt",
                            f"the effect of {key[0]!r} ran as attempt {key[1]}, which its log never started: a run the "
                            f"log cannot account for.")
            return
        for k, state in recorded.items():
            verdict = verdict_before(step.log_after, len(step.log_after), key[0], k)
            if verdict and verdict.get("resolution") in ("succeeded", "failed") and isinstance(key[1], int) and key[1] > k:
                cited = [(seq, role) for seq, role in (
                    (_verdict_seq(step.log_after, key[0], k), f"the {verdict['resolution']} verdict for attempt {k}: "
                                                              "the step is settled, nothing may run it again"),
                    (_started_seq(step.log_after, key[0], key[1]), f"attempt {key[1]} started after that verdict, "
                                                                    "and its effect ran")) if seq]
                yield Violation("indoubt.effect-once-per-attempt",
                                f"the effect of {key[0]!r} ran again (attempt {key[1]}) after a {verdict['resolution']} "
                                f"verdict for attempt {k}.", tuple(s for s, _ in cited), tuple(r for _, r in cited),
                                "a verdict settles the step: no further attempt runs its effect (ADR 0104 D1)")
                return
