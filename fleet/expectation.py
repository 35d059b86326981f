"""A fleet case built from its history, with the expected block: the oracle's verdict
on the log as it stands (properties/stray_oracle.py, spec/legacy-logs.md) and, when the
final operation is accepted, what the current kernel's run does (fleet/current_run.py).
Neither runs the reference kernel (docs/fleet.md)."""

from __future__ import annotations

import copy
from typing import Mapping

from loomcheck.fleet.corpus import Case
from loomcheck.fleet.current_run import JSON, Program, Run, expected_run, fact_key
from loomcheck.fleet.writers import Done, Fleet
from loomcheck.properties.stray_oracle import TERMINAL, Expected, expected_json, kinds_of, scan_log
from loomcheck.spec.names import INDOUBT_DECISION_PREFIX, OBSERVED_EVENT

EXECUTION = "x"
FLOW = "f"
REFUSAL = "ambiguous-legacy-answers"


def history_entry(writer: str, operation: Mapping[str, JSON], done: Done) -> dict[str, JSON]:
    return {"op": operation["op"], "writer": writer, "type": operation.get("type"),
            "payload": copy.deepcopy(operation.get("payload")), "flowId": operation.get("flowId"),
            "upto": operation.get("upto"), "events": copy.deepcopy(operation.get("events")), "result": done.result}


def build_case(case_id: str, kind: str, title: str, fleet: Fleet, history: list[dict[str, JSON]],
               final: dict[str, JSON], schedule: str | None = None,
               downgrade: dict[str, JSON] | None = None) -> Case:
    log, snapshot = fleet.log(), fleet.snapshot()
    expected, live = expectation(fleet.flows, log, snapshot, final)
    targets = {flow_id: program for flow_id, program in fleet.flows.items() if flow_id != FLOW}
    return Case.model_validate({
        "id": case_id, "kind": kind, "title": title, "schedule": schedule, "executionId": fleet.execution_id,
        "flowId": FLOW, "program": fleet.flows[FLOW], "targets": targets, "log": log, "snapshot": snapshot,
        "writers": [h["writer"] for h in history if not str(h["result"]).startswith("refused")],
        "history": history, "final": final, "live": live, "expected": expected, "downgrade": downgrade,
    })


def expectation(flows: Mapping[str, Program], log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None,
                final: Mapping[str, JSON]) -> tuple[dict[str, JSON], bool]:
    """What the current kernel must do with the final operation: the oracle's verdict
    on the log as it stands, then (accepted) the answers and what the run's suspend
    points receive. Returns the `expected` block and whether the operation is live."""
    flow_id = str(final["flowId"]) if final["op"] == "resumeAs" else flow_of(log, snapshot)
    program = flows[flow_id]  # a resumeAs is scanned against, and runs, its target's steps
    verdict = scan_log(log, snapshot, kinds_of(program))
    live = final["op"] == "resumeAs" and verdict.status in TERMINAL
    if live:
        verdict = scan_log(log, snapshot, kinds_of(program), live=True)  # D2: a re-open is judged live
    judged = expected_json(verdict)
    refused = judged.pop("refused")
    if refused:
        return {**judged, "outcome": "refused", "reason": REFUSAL, "answers": None, "receives": None,
                "observed": None, "status": None}, live
    run = run_after(verdict, log, snapshot, final)
    status = expected_run(program, run)
    return {**judged, "outcome": "accepted", "reason": None, "answers": run.answers, "receives": run.passed,
            "observed": run.appended, "status": status}, live


def flow_of(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None) -> str:
    """The flow the execution runs on: its start's, or the latest migration's target."""
    flow = (snapshot or {}).get("flowId") if snapshot_applies(log, snapshot) else None
    for event in log:
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        if event.get("type") == "EXECUTION_STARTED":
            flow = payload.get("flowId")
        elif event.get("type") == "EXECUTION_MIGRATED" and isinstance(payload.get("toFlow"), str):
            flow = payload["toFlow"]
    return str(flow or FLOW)


def snapshot_applies(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None) -> bool:
    return snapshot is not None and (not log or int(log[0]["seq"]) > 1)


def run_after(verdict: Expected, log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None,
              final: Mapping[str, JSON]) -> Run:
    """The state after the final operation's own records (ADR 0104 D1): an answer at
    a gate or human park is an entry; an in-doubt verdict is a decision (its null
    resume is status-only, D3); a recovery, or a resumeAs onto an unparked execution,
    adds no entry."""
    answers, latest = list(verdict.answers), verdict.latest
    steps, decisions = frames_of(log, snapshot)
    answering = final["op"] in ("resume", "resumeAs")
    if answering and verdict.park in ("gate", "human"):
        answers = (answers if verdict.listed else []) + [copy.deepcopy(final["payload"])]
        latest = copy.deepcopy(final["payload"])
    elif answering and verdict.park == "in-doubt":
        condition = parked_condition(log, snapshot)
        decision = f"{INDOUBT_DECISION_PREFIX}:{condition.get('stepId')}:{int(condition.get('attempt') or 1)}"
        decisions[decision] = copy.deepcopy(final["payload"])
    facts = {fact_key(e.get("payload")) for e in log if e.get("type") == OBSERVED_EVENT}
    return Run(copy.deepcopy(answers), latest, steps, decisions, facts)


def frames_of(log: list[dict[str, JSON]],
              snapshot: Mapping[str, JSON] | None) -> tuple[dict[str, dict[str, JSON]], dict[str, JSON]]:
    """Step frames and decisions, folded from the snapshot (when it applies) and the log."""
    use = snapshot_applies(log, snapshot)
    steps = copy.deepcopy((snapshot or {}).get("steps") or {}) if use else {}
    decisions = copy.deepcopy(((snapshot or {}).get("variables") or {}).get("_decisions") or {}) if use else {}
    for event in log:
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        step = payload.get("stepId")
        kind = event.get("type")
        if kind == "DECISION_RECORDED" and isinstance(payload.get("decisionId"), str):
            decisions[payload["decisionId"]] = copy.deepcopy(payload.get("choice"))
        if not isinstance(step, str):
            continue
        if kind == "STEP_STARTED":
            frame = steps.setdefault(step, {})
            attempt = payload.get("attempt")
            frame["attempt"] = attempt if isinstance(attempt, int) else int(frame.get("attempt") or 0) + 1
            frame["status"] = "started"
        elif kind == "STEP_COMPLETED":
            steps.setdefault(step, {"attempt": 1}).update(status="completed", output=copy.deepcopy(payload.get("output")))
        elif kind == "STEP_FAILED":
            steps.setdefault(step, {"attempt": 1})["status"] = "failed"
        elif kind == "EFFECT_INDOUBT":
            steps.setdefault(step, {"attempt": 1})["inDoubtAttempt"] = payload.get("attempt")
    return steps, decisions


def parked_condition(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None) -> dict[str, JSON]:
    """The condition of the park the execution is in (the last one recorded)."""
    for event in reversed(log):
        if event.get("type") == "EXECUTION_SUSPENDED":
            condition = (event.get("payload") or {}).get("condition")
            return condition if isinstance(condition, dict) else {}
    condition = (snapshot or {}).get("suspendedOn")
    return condition if isinstance(condition, dict) else {}

