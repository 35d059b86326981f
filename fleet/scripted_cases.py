"""The hand-written fleet cases, always in the corpus: the logs ADR 0104 D2 singles out,
the logs where the spec's rule lets a human step take a stray, and the downgrade hazard
(a 1.20.0 null resume read by an older node) (docs/fleet.md)."""

from __future__ import annotations

from typing import Mapping

from loomcheck.fleet.corpus import Case
from loomcheck.fleet.current_run import JSON, Program, is_suspend_point
from loomcheck.fleet.expectation import (EXECUTION, FLOW, build_case, expectation, flow_of, history_entry,
                                        snapshot_applies)
from loomcheck.fleet.writers import CURRENT, PRE_0104, PRE_116, Fleet, pre_120_fold
from loomcheck.properties.stray_oracle import kinds_of, scan_log
from loomcheck.reference.events import Event
from loomcheck.reference.fold import State
from loomcheck.spec.names import DISCARD_DECISION_PREFIX, IN_DOUBT_GATE, OBSERVED_EVENT

Script = list[tuple[str, dict[str, JSON]]]


def scripted(flows: Mapping[str, Program], script: Script) -> tuple[Fleet, list[dict[str, JSON]]]:
    """Run a script of (writer, operation) on a fresh fleet. A truncate up to "end"
    retains the whole log away (a snapshot and no events)."""
    fleet = Fleet(flows, EXECUTION)
    history: list[dict[str, JSON]] = []
    for writer, op in script:
        if op["op"] == "truncate" and op.get("upto") == "end":
            op = {**op, "upto": fleet.store.next_seq(EXECUTION) - 1}
        history.append(history_entry(writer, op, fleet.perform(writer, op)))
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
    base = State.from_json(snapshot) if snapshot_applies(log, snapshot) and snapshot is not None else None
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
    return [op for op in calls if is_suspend_point(op)]


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

