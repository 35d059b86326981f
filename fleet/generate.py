"""The fleet corpus: logs a mixed-version deployment writes, each with the verdict
spec/legacy-logs.md gives it (ADR 0104 D2).

A generated case is a small linear flow program, a history of 1-8 operations,
each done by a node of the version a deploy schedule picks (all old, rolling
old -> new, rolling with old stragglers, all new), then ONE final operation
judged by the current kernel. Its `expected` block comes from the oracle
(properties/stray_oracle.py) and from `expected_run` below, which plays the program
by the ADRs' rules; neither runs the reference kernel. Hand-written cases
(`fixed_cases`) and the downgrade hazard (`downgrade_hazard_cases`) are always
included.

Seeded and reproducible: case i draws from `random.Random("loomcheck.fleet/<seed>/<i>")`
only, so the same seed and count give byte-identical output, and a corpus of
10 cases is the first 10 of a corpus of 1000.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from loomcheck.fleet.corpus import Case, Corpus
from loomcheck.fleet.writers import CURRENT, PRE_0104, PRE_116, Done, Fleet, pre_120_fold
from loomcheck.properties.stray_oracle import TERMINAL, Expected, expected_json, kinds_of, scan_log
from loomcheck.reference.events import Event
from loomcheck.reference.fold import State
from loomcheck.spec.names import (DISCARD_DECISION_PREFIX, HUMAN_GATE, INDOUBT_DECISION_PREFIX, IN_DOUBT_GATE,
                                  OBSERVED_EVENT)

JSON = Any
Program = dict[str, JSON]
SCHEDULES = ("all-old", "rolling", "rolling-straggler", "all-new")
EXECUTION = "x"
FLOW = "f"
REFUSAL = "ambiguous-legacy-answers"
VERDICTS = ("succeeded", "failed", "retry-fresh")


# -- random programs and payloads -----------------------------------------------------------
def random_program(rng: random.Random) -> Program:
    """2-6 ops among gates, idempotent / non-idempotent steps (maybe with a crash
    fault, so recovery and in-doubt parks happen) and human steps; an observe after
    each suspend point records what it received."""
    body: list[JSON] = []
    steps = humans = gates = 0
    for _ in range(rng.randint(2, 6)):
        kind = rng.choices(["gate", "idempotent", "non-idempotent", "human"], weights=[3, 2, 2, 1.5])[0]
        if kind == "gate":
            gates += 1
            body += [{"op": "suspend", "on": f"go{gates}"}, {"op": "observe"}]
        elif kind == "human":
            humans += 1
            body += [{"op": "step", "id": f"h{humans}", "kind": "human", "on": f"ok-h{humans}"}, {"op": "observe"}]
        else:
            steps += 1
            body.append(_random_step(rng, f"s{steps}", kind))
    return {"body": body}


def _random_step(rng: random.Random, step_id: str, kind: str) -> dict[str, JSON]:
    step: dict[str, JSON] = {"op": "step", "id": step_id, "output": f"out-{step_id}"}
    if kind == "non-idempotent":
        step["kind"] = kind
    if rng.random() < (0.6 if kind == "non-idempotent" else 0.4):
        step["crash"] = {"at": rng.choice(["before-effect", "after-effect"]),
                         "attempts": rng.choice([[1], [1], [1, 2]])}
    return step


def random_payload(rng: random.Random) -> JSON:
    """A small JSON answer; `{}` and null on purpose: they look like what old kernels wrote."""
    return rng.choice([{"ok": True}, {"n": rng.randint(1, 9)}, {"by": rng.choice(["ann", "bo"])}, "yes", 7,
                       [1, 2], None, {}])


def random_verdict(rng: random.Random, step_id: str) -> dict[str, JSON]:
    resolution = rng.choice(["succeeded", "succeeded", "failed", "retry-fresh"])
    verdict: dict[str, JSON] = {"stepId": step_id, "resolution": resolution}
    if resolution == "succeeded":
        verdict["output"] = f"verdict-{step_id}"
    return verdict


# -- deploy schedules ----------------------------------------------------------------------
def schedule_writers(rng: random.Random, schedule: str, count: int) -> list[str]:
    """The node version for each of `count` operations under a deploy schedule."""
    def old() -> str:
        return rng.choice([PRE_0104, PRE_0104, PRE_116])

    if schedule == "all-old":
        return [old() for _ in range(count)]
    if schedule == "all-new":
        return [CURRENT] * count
    cut = rng.randint(1, count) if schedule == "rolling" else rng.randint(0, count - 1)
    writers = [old() if i < cut else CURRENT for i in range(count)]
    if schedule == "rolling-straggler":
        # ADR 0104 D2, "Rolling deploys": old nodes still write after new ones did.
        writers = [w if i <= cut else rng.choice([old(), CURRENT]) for i, w in enumerate(writers)]
    return writers


# -- the history ----------------------------------------------------------------------------
def next_operation(rng: random.Random, fleet: Fleet, view: State) -> dict[str, JSON] | None:
    """An operation that fits the execution as this node reads it; None to do nothing."""
    last = fleet.store.next_seq(EXECUTION) - 1
    retained_from = (fleet.store.get_snapshot(EXECUTION) or (0, None))[0]
    if last > retained_from + 1 and rng.random() < 0.12:
        return {"op": "truncate", "upto": rng.randint(retained_from + 1, last)}
    if view.status == "suspended":
        return _answer(rng, view, resume_as=rng.random() < 0.2)
    if view.status in ("running", "pending"):
        if rng.random() < 0.75:
            return {"op": "recover"}
        return {"op": "resumeAs", "flowId": FLOW, "type": "migrate", "payload": random_payload(rng)}
    if rng.random() < 0.6:
        return {"op": "resumeAs", "flowId": FLOW, "type": "reopen", "payload": random_payload(rng)}
    return None


def _answer(rng: random.Random, view: State, resume_as: bool) -> dict[str, JSON]:
    """A resume (or resumeAs) naming the parked gate; at an in-doubt park, a verdict."""
    condition = view.suspended_on or {}
    on = str(view.parked_on)
    payload = random_verdict(rng, str(condition.get("stepId"))) if on == IN_DOUBT_GATE else random_payload(rng)
    if resume_as:
        return {"op": "resumeAs", "flowId": FLOW, "type": on, "payload": payload}
    return {"op": "resume", "type": on, "payload": payload}


def final_operation(rng: random.Random, view: State) -> dict[str, JSON]:
    """The operation judged by the current kernel: resume the parked gate, recover a
    crashed execution, or resumeAs (onto a terminal execution too: judged live)."""
    if view.status == "suspended":
        operation = _answer(rng, view, resume_as=rng.random() < 0.25)
    elif view.status in ("running", "pending"):
        operation = {"op": "recover"} if rng.random() < 0.7 else \
            {"op": "resumeAs", "flowId": FLOW, "type": "migrate", "payload": random_payload(rng)}
    else:
        operation = {"op": "resumeAs", "flowId": FLOW, "type": "reopen", "payload": random_payload(rng)}
    return {"op": operation["op"], "type": operation.get("type"), "payload": operation.get("payload"),
            "flowId": operation.get("flowId")}


def _history_entry(writer: str, operation: Mapping[str, JSON], done: Done) -> dict[str, JSON]:
    return {"op": operation["op"], "writer": writer, "type": operation.get("type"),
            "payload": copy.deepcopy(operation.get("payload")), "flowId": operation.get("flowId"),
            "upto": operation.get("upto"), "events": copy.deepcopy(operation.get("events")), "result": done.result}


def generated_case(seed: int, index: int) -> Case:
    rng = random.Random(f"loomcheck.fleet/{seed}/{index}")
    program = random_program(rng)
    schedule = rng.choice(SCHEDULES)
    count = rng.randint(1, 8)
    fleet = Fleet({FLOW: program}, EXECUTION)
    history: list[dict[str, JSON]] = []
    for number, writer in enumerate(schedule_writers(rng, schedule, count)):
        operation = {"op": "start", "flowId": FLOW} if number == 0 else next_operation(rng, fleet, fleet.view(writer))
        if operation is not None:
            history.append(_history_entry(writer, operation, fleet.perform(writer, operation)))
    final = final_operation(rng, fleet.view(CURRENT))
    title = f"{schedule}, {len(history)} operations, then {final['op']} on {CURRENT}"
    return build_case(f"g{seed}-{index:05d}", "generated", title, fleet, history, final, schedule)


# -- the expectation -------------------------------------------------------------------------
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
    flow = (snapshot or {}).get("flowId") if _snapshot_applies(log, snapshot) else None
    for event in log:
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        if event.get("type") == "EXECUTION_STARTED":
            flow = payload.get("flowId")
        elif event.get("type") == "EXECUTION_MIGRATED" and isinstance(payload.get("toFlow"), str):
            flow = payload["toFlow"]
    return str(flow or FLOW)


def _snapshot_applies(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None) -> bool:
    return snapshot is not None and (not log or int(log[0]["seq"]) > 1)


@dataclass
class Run:
    """The folded state the current kernel's run starts from, and what the run did."""

    answers: list[JSON]
    latest: JSON
    steps: dict[str, dict[str, JSON]]
    decisions: dict[str, JSON]
    facts: set[str]
    consumed: int = 0
    passed: list[dict[str, JSON]] = field(default_factory=list)
    observed_upto: int = 0
    appended: list[dict[str, JSON]] = field(default_factory=list)

    def take(self) -> tuple[bool, JSON]:
        """ADR 0057: the next entry in call order, if one is recorded."""
        if self.consumed < len(self.answers):
            self.consumed += 1
            return True, self.answers[self.consumed - 1]
        return False, None


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
    facts = {_fact(e.get("payload")) for e in log if e.get("type") == OBSERVED_EVENT}
    return Run(copy.deepcopy(answers), latest, steps, decisions, facts)


def frames_of(log: list[dict[str, JSON]],
              snapshot: Mapping[str, JSON] | None) -> tuple[dict[str, dict[str, JSON]], dict[str, JSON]]:
    """Step frames and decisions, folded from the snapshot (when it applies) and the log."""
    use = _snapshot_applies(log, snapshot)
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


def _fact(payload: JSON) -> str:
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# -- the run on the current kernel, by the ADRs' rules ----------------------------------------
PARKED, CRASHED, FAILED, PASSED = "suspended", "running", "failed", "passed"


def expected_run(program: Program, run: Run) -> str:
    """Play the program from the top as the current kernel runs it; the status it
    ends in. ADR 0057: the i-th suspend point in call order takes entry i. ADR 0104
    D1: a human step takes an answer only once it has parked, completes with it, and
    still consumes its entry on replay; an in-doubt park consumes none. D2: a
    recorded __loom_discard__:<step> makes the step skip that many entries first."""
    point = 0
    for op in program.get("body") or []:
        kind = op.get("op")
        if kind == "complete":
            return "completed"
        if kind == "observe":
            _observe(run)
            continue
        branches = op.get("branches") if kind == "parallel" else [op]
        if branches is None or any(b.get("op") not in ("step", "suspend") for b in branches):
            raise ValueError(f"the fleet's expectation does not cover the {kind!r} op")
        outcomes: list[str] = []
        for branch in branches:
            outcome = _call(branch, point, run)
            point += _is_point(branch)
            if outcome in (CRASHED, FAILED):
                return outcome  # a crash or a failed step ends the run (not caught by a parallel)
            outcomes.append(outcome)
        if PARKED in outcomes:
            return PARKED
    return "completed"


def _is_point(op: Mapping[str, JSON]) -> int:
    return int(op.get("op") == "suspend" or (op.get("op") == "step" and op.get("kind") == "human"))


def _call(op: Mapping[str, JSON], point: int, run: Run) -> str:
    if op["op"] == "suspend":
        taken, value = run.take()
        if not taken:
            return PARKED
        run.passed.append({"gate": point, "on": op["on"], "value": copy.deepcopy(value)})
        return PASSED
    if op.get("kind") == "human":
        return _human(op, point, run)
    return _effect_step(op, run)


def _human(op: Mapping[str, JSON], point: int, run: Run) -> str:
    step_id, on = str(op["id"]), str(op.get("on") or HUMAN_GATE)
    frame = run.steps.get(step_id)
    if frame is None:
        run.steps[step_id] = {"status": "started", "attempt": 1}  # it starts and parks; consumes nothing
        return PARKED
    count = run.decisions.get(f"{DISCARD_DECISION_PREFIX}:{step_id}")
    if type(count) is int and count > 0:
        run.consumed += count  # the operator's override, live and on every replay
    if frame.get("status") == "completed":
        run.take()  # replay still consumes its entry, so no later gate gets it
        run.passed.append({"gate": point, "on": on, "value": copy.deepcopy(frame.get("output"))})
        return PASSED
    taken, value = run.take()
    if not taken:
        return PARKED
    frame.update(status="completed", output=copy.deepcopy(value))
    run.passed.append({"gate": point, "on": on, "value": copy.deepcopy(value)})
    return PASSED


def _effect_step(op: Mapping[str, JSON], run: Run) -> str:
    step_id = str(op["id"])
    frame = run.steps.get(step_id)
    if frame is not None and frame.get("status") == "completed":
        return PASSED
    attempt = 1
    if frame is not None:
        previous = int(frame.get("attempt") or 1)
        attempt = previous + 1
        if op.get("kind") == "non-idempotent":
            verdict = _verdict(run, step_id, previous, frame)
            if verdict is None:
                frame["inDoubtAttempt"] = previous
                return PARKED  # in doubt: parks for an operator's verdict, consuming no entry
            if verdict["resolution"] == "succeeded":
                frame.update(status="completed", output=copy.deepcopy(verdict.get("output")))
                return PASSED
            if verdict["resolution"] == "failed":
                return FAILED
    crash = op.get("crash")
    if isinstance(crash, dict) and attempt in (crash.get("attempts") or [1]):
        run.steps[step_id] = {"status": "started", "attempt": attempt}
        return CRASHED
    run.steps[step_id] = {"status": "completed", "attempt": attempt, "output": copy.deepcopy(op.get("output"))}
    return PASSED


def _verdict(run: Run, step_id: str, attempt: int, frame: Mapping[str, JSON]) -> dict[str, JSON] | None:
    """ADR 0104 D1: the verdict for the CURRENT attempt only, beside the step's
    EFFECT_INDOUBT for it; a pre-0104 verdict (the latest entry) only then too."""
    if frame.get("inDoubtAttempt") != attempt:
        return None
    for candidate in (run.decisions.get(f"{INDOUBT_DECISION_PREFIX}:{step_id}:{attempt}"), run.latest):
        if isinstance(candidate, dict) and candidate.get("stepId") == step_id \
                and candidate.get("resolution") in VERDICTS:
            return candidate
    return None


def _observe(run: Run) -> None:
    """What each suspend point passed since the last observe; a fact the log already
    holds is not appended again."""
    for passed in run.passed[run.observed_upto:]:
        key = _fact(passed)
        if key not in run.facts:
            run.facts.add(key)
            run.appended.append(copy.deepcopy(passed))
    run.observed_upto = len(run.passed)


# -- scripted cases ----------------------------------------------------------------------------
Script = list[tuple[str, dict[str, JSON]]]


def scripted(flows: Mapping[str, Program], script: Script) -> tuple[Fleet, list[dict[str, JSON]]]:
    """Run a script of (writer, operation) on a fresh fleet. A truncate up to "end"
    retains the whole log away (a snapshot and no events)."""
    fleet = Fleet(flows, EXECUTION)
    history: list[dict[str, JSON]] = []
    for writer, op in script:
        if op["op"] == "truncate" and op.get("upto") == "end":
            op = {**op, "upto": fleet.store.next_seq(EXECUTION) - 1}
        history.append(_history_entry(writer, op, fleet.perform(writer, op)))
    return fleet, history


def _final(op: str, type_: str | None = None, payload: JSON = None, flow_id: str | None = None) -> dict[str, JSON]:
    return {"op": op, "type": type_, "payload": payload, "flowId": flow_id}



def gate(on: str) -> list[dict[str, JSON]]:
    return [{"op": "suspend", "on": on}, {"op": "observe"}]


def human(step_id: str, on: str | None = None) -> dict[str, JSON]:
    return {"op": "step", "id": step_id, "kind": "human", "on": on or f"ok-{step_id}"}


def crashing(step_id: str, attempts: list[int] | None = None, kind: str | None = None) -> dict[str, JSON]:
    step: dict[str, JSON] = {"op": "step", "id": step_id, "output": f"out-{step_id}"}
    if kind is not None:
        step["kind"] = kind
    step["crash"] = {"at": "after-effect" if kind == "non-idempotent" else "before-effect",
                     "attempts": attempts or [1]}
    return step


OBSERVE: dict[str, JSON] = {"op": "observe"}
START: dict[str, JSON] = {"op": "start", "flowId": FLOW}
RECOVER: dict[str, JSON] = {"op": "recover"}


def fixed_cases() -> list[Case]:
    """The hand-written cases, always present: the logs ADR 0104 D2 singles out
    (the parallel 0104 log, both ambiguity shapes, a human park proving nothing, a
    pre-1.16 snapshot, the known false positive), and three logs where the spec's
    rule lets a human step take a stray as its answer, recorded as the spec judges them."""
    return [_parallel_humans(), _reparked_after_answer(), _stray_before_first_start(), _human_park_proves_nothing(),
            _pre_116_snapshot(), _known_false_positive(), _stray_after_first_start(), _parallel_park_read_as_gate(),
            _retained_stray_before_first_start()]


def _case_of(case_id: str, title: str, flows: Mapping[str, Program], script: Script,
             final: dict[str, JSON]) -> Case:
    fleet, history = scripted(flows, script)
    return build_case(case_id, "fixed", title, fleet, history, final)


def _parallel_humans() -> Case:
    """ADR 0104 D2: two human steps in one ctx.parallel park one at a time, the first
    park being the FIRST step's. The first version of the rule (credit the most
    recently started open human step) refused this valid log; it must be accepted."""
    program = {"body": [{"op": "parallel", "branches": [human("a"), human("b")]}, OBSERVE]}
    script = [(CURRENT, START), (CURRENT, {"op": "resume", "type": "ok-a", "payload": {"ok": "A"}})]
    return _case_of("fixed-parallel-two-human", "0104 log: two human steps in one parallel, answered in turn "
                    "(accepted; the first version of the rule refused it)", {FLOW: program}, script,
                    _final("resume", "ok-b", {"ok": "B"}))


def _reparked_after_answer() -> Case:
    """Ambiguity shape 1: a pre-0104 human step re-parks (no stepId) after its answer."""
    program = {"body": [human("h"), OBSERVE, *gate("go1")]}
    script = [(PRE_0104, START), (PRE_0104, {"op": "resume", "type": "ok-h", "payload": {"ok": "A"}})]
    return _case_of("fixed-reparked-after-answer", "pre-0104 human step re-parked after its answer: refused",
                    {FLOW: program}, script, _final("resume", "ok-h", {"ok": "B"}))


def _stray_before_first_start() -> Case:
    """Ambiguity shape 2: the old recovery's {} is unspent when the human step first starts."""
    program = {"body": [crashing("a"), human("h"), OBSERVE, *gate("go1")]}
    script = [(PRE_0104, START), (PRE_0104, RECOVER)]
    return _case_of("fixed-stray-before-first-start", "recovery stray unspent at a human step's first start: refused",
                    {FLOW: program}, script, _final("resume", "ok-h", {"ok": "A"}))


def _human_park_proves_nothing() -> Case:
    """A human park consumes nothing, so it proves nothing (D2): the stray before it
    stays at-risk. The ambiguity it made is resolved by the operator's override,
    recorded as the kernel records it (here appended as such), so the case is accepted."""
    program = {"body": [crashing("a"), human("h"), OBSERVE, crashing("b"), *gate("go1")]}
    override = {"type": "DECISION_RECORDED", "payload": {
        "decisionId": f"{DISCARD_DECISION_PREFIX}:h", "choice": 1, "source": "operator",
        "rationale": {"approval": {"actor": "operator", "verifiedBy": "fleet-fixture"}}}}
    script = [(PRE_0104, START), (PRE_0104, RECOVER), (CURRENT, {"op": "append", "events": [override]}),
              (CURRENT, {"op": "resume", "type": "ok-h", "payload": {"ok": "A"}})]
    return _case_of("fixed-human-park-proves-nothing", "a stray before a human park stays at-risk (override "
                    "count 1 resolved the ambiguity)", {FLOW: program}, script, _final("recover"))


def _pre_116_snapshot() -> Case:
    """Retention by a 1.15.0 node: the snapshot holds only `_resumePayload` = {} (the
    old recovery's), and no gate park in the (empty) retained log explains it."""
    program = {"body": [crashing("a"), *gate("go1"), crashing("b"), *gate("go2")]}
    script = [(PRE_116, START), (PRE_116, RECOVER), (PRE_116, {"op": "truncate", "upto": "end"})]
    return _case_of("fixed-pre-116-snapshot", "pre-1.16 snapshot holding {}: unverifiable, accepted",
                    {FLOW: program}, script, _final("recover"))


def _known_false_positive() -> Case:
    """ADR 0104 D2's known false positive: a pre-0104 stray a gate passthrough already
    consumed (no park after it), then a human step first reached on the new kernel.
    Refused; the operator's signed `count: 0` resolves it (not recorded here)."""
    program = {"body": [crashing("a"), *gate("go1"), crashing("b"), human("h"), OBSERVE]}
    script = [(PRE_0104, START), (PRE_0104, RECOVER), (CURRENT, RECOVER)]
    return _case_of("fixed-known-false-positive", "stray spent by a gate passthrough, human step first reached "
                    "on 1.20.0: refused (count 0 would resolve it)", {FLOW: program}, script,
                    _final("resume", "ok-h", {"ok": "A"}))


def _stray_after_first_start() -> Case:
    """Outside both ambiguity shapes, recorded as the spec judges it: a human step in
    a parallel STARTED, the worker crashed before its park was recorded, an old node's
    recovery wrote {}; the step has started, so neither shape applies, and the
    current kernel's recovery completes the human step with that {} (at-risk only)."""
    program = {"body": [{"op": "parallel", "branches": [human("h"), crashing("a", [1, 2])]}, OBSERVE, *gate("go1")]}
    script = [(CURRENT, START), (PRE_0104, RECOVER)]
    return _case_of("fixed-stray-after-first-start", "stray after a human step's first start, before its park: "
                    "accepted at-risk by the spec, the step takes the stray", {FLOW: program}, script,
                    _final("recover"))


def _parallel_park_read_as_gate() -> Case:
    """Outside both shapes too: a pre-0104 human step in a parallel with a plain step.
    The park follows the sibling's STEP_COMPLETED, not the human step's STEP_STARTED,
    so section 2 reads it as a gate park and the recovery's {} as passed; the human
    step then takes that {} and the operator's answer goes on to go1."""
    program = {"body": [{"op": "parallel", "branches": [human("h"), crashing("a")]}, OBSERVE, *gate("go1")]}
    script = [(PRE_0104, START), (PRE_0104, RECOVER)]
    return _case_of("fixed-parallel-park-read-as-gate", "pre-0104 human park after a sibling step's completion reads "
                    "as a gate park: the stray is 'passed', accepted", {FLOW: program}, script,
                    _final("resume", "ok-h", {"ok": "A"}))


def _retained_stray_before_first_start() -> Case:
    """The snapshot's unexplained {} is not a stray of the walk, so a human step first
    started after retention is not ambiguous (section 2 names strays only): the
    entry is only unverifiable, and the human step takes it as its answer."""
    program = {"body": [crashing("a"), crashing("b"), human("h"), OBSERVE]}
    script = [(PRE_0104, START), (PRE_0104, RECOVER), (PRE_0104, {"op": "truncate", "upto": "end"}),
              (CURRENT, RECOVER)]
    return _case_of("fixed-retained-stray-before-first-start", "a snapshot's {} before a human step's first start: "
                    "unverifiable only, accepted", {FLOW: program}, script, _final("resume", "ok-h", {"ok": "A"}))


# -- the downgrade hazard ------------------------------------------------------------------------
def downgrade_hazard_cases() -> list[Case]:
    """ADR 0104 D2, "Downgrade follows from that": a 1.20.0 node writes
    EXECUTION_RESUMED(null) for an in-doubt verdict and for a resumeAs onto a terminal
    execution. The current fold keeps it status-only (D3); the pre-1.20 fold (the
    1.19.0 writer's) folds it as an entry, and the next gate is served that null."""
    indoubt = {"body": [crashing("a", kind="non-idempotent"), *gate("go1")]}
    verdict = {"stepId": "a", "resolution": "succeeded", "output": "done"}
    first = _downgrade("downgrade-indoubt-verdict", "a 1.20.0 in-doubt verdict's null, read by a 1.19.0 node",
                       {FLOW: indoubt}, [(CURRENT, START), (CURRENT, RECOVER),
                                         (CURRENT, {"op": "resume", "type": IN_DOUBT_GATE, "payload": verdict})],
                       _final("resume", "go1", {"approved": "Q"}))
    one_gate = {"body": gate("go1")}
    two_gates = {"body": [*gate("go1"), *gate("go2")]}
    second = _downgrade("downgrade-reopen-terminal", "a 1.20.0 resumeAs onto a completed execution, read by a "
                        "1.19.0 node", {FLOW: one_gate, "f2": two_gates},
                        [(CURRENT, START), (CURRENT, {"op": "resume", "type": "go1", "payload": {"ok": "P"}}),
                         (CURRENT, {"op": "resumeAs", "flowId": "f2", "type": "reopen", "payload": {"note": "v2"}})],
                        _final("resume", "go2", {"approved": "Q"}))
    return [first, second]


def _downgrade(case_id: str, title: str, flows: Mapping[str, Program], script: Script,
               final: dict[str, JSON]) -> Case:
    fleet, history = scripted(flows, script)
    log, snapshot = fleet.log(), fleet.snapshot()
    pre120 = _pre_120_entries(log, snapshot)
    null_at = _status_only_nulls(log)
    program = fleet.flows[flow_of(log, snapshot)]
    index = null_at[0]
    on = str(_suspend_points(program)[index].get("on"))
    expected, _ = expectation(fleet.flows, log, snapshot, final)
    current = next((r["value"] for r in expected["receives"] or [] if r["gate"] == index), None)
    block = {"currentEntries": list(scan_log(log, snapshot, kinds_of(program)).answers), "pre120Entries": pre120,
             "nullAt": null_at, "gate": {"index": index, "on": on}, "receivesCurrent": current,
             "receivesPre120": _old_node_receives(flows, script, final, index)}
    return build_case(case_id, "downgrade-hazard", title, fleet, history, final, downgrade=block)


def _pre_120_entries(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None) -> list[JSON]:
    """The answer list as the 1.19.0 writer's fold reads the log."""
    base = State.from_json(snapshot) if _snapshot_applies(log, snapshot) and snapshot is not None else None
    events = [Event(EXECUTION, int(e["seq"]), str(e["type"]), e.get("payload")) for e in log]
    return list(pre_120_fold(events, base).variables.get("_resumePayloads") or [])


def _status_only_nulls(log: list[dict[str, JSON]]) -> list[int]:
    """Where in the pre-1.20 list the nulls sit that the current fold keeps
    status-only (D3: null while not parked, or parked in doubt)."""
    positions: list[int] = []
    entries, parked_on = 0, None
    for event in log:
        kind, payload = event.get("type"), event.get("payload")
        if kind == "EXECUTION_SUSPENDED":
            parked_on = ((payload or {}).get("condition") or {}).get("on", "")
        elif kind in ("EXECUTION_STARTED", "EXECUTION_COMPLETED", "EXECUTION_FAILED", "EXECUTION_CANCELLED"):
            parked_on = None
        elif kind == "EXECUTION_RESUMED":
            if payload is None and (parked_on is None or parked_on == IN_DOUBT_GATE):
                positions.append(entries)
            entries, parked_on = entries + 1, None
    return positions


def _suspend_points(program: Program) -> list[dict[str, JSON]]:
    calls: list[dict[str, JSON]] = []
    for op in program.get("body") or []:
        calls.extend(op.get("branches") or [] if op.get("op") == "parallel" else [op])
    return [op for op in calls if _is_point(op)]


def _old_node_receives(flows: Mapping[str, Program], script: Script, final: Mapping[str, JSON], index: int) -> JSON:
    """Demonstrated, not derived: the same history, then the final operation on a
    1.19.0 node; what the gate at `index` observed."""
    fleet, _ = scripted(flows, script)
    before = len(fleet.log())
    fleet.perform(PRE_0104, {k: v for k, v in final.items() if v is not None or k == "payload"})
    for event in fleet.log()[before:]:
        if event["type"] == OBSERVED_EVENT and event["payload"].get("gate") == index:
            return event["payload"].get("value")
    raise AssertionError(f"the 1.19.0 node's run did not pass gate {index}")


# -- the corpus ------------------------------------------------------------------------------------
def generate(count: int, seed: int, *, progress: Callable[[int], None] | None = None) -> Corpus:
    """`count` generated cases for `seed`, after the fixed and downgrade-hazard cases."""
    if type(count) is not int or count < 0:
        raise ValueError(f"count must be a whole number >= 0, not {count!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be a whole number, not {seed!r}")
    cases = fixed_cases() + downgrade_hazard_cases()
    for index in range(count):
        cases.append(generated_case(seed, index))
        if progress is not None:
            progress(index + 1)
    return Corpus(seed=seed, count=count, cases=cases)


__all__ = ["generate", "generated_case", "fixed_cases", "downgrade_hazard_cases", "expectation", "expected_run",
           "random_program", "schedule_writers", "SCHEDULES"]
