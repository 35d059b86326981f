"""A small in-memory kernel, written as a new user would: from docs/driver.md and the ADRs alone.

It keeps one list of events per execution, folds it on every read, and re-runs the flow
program from the top on every operation, replaying recorded steps and answers. Where the
ADRs leave a choice open it makes its own (messages, an open step's status name, extra
payload fields, variables absent until their first value). `make()` is the factory.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator

from loomcheck.harness.driver import Hello, Outcome
from loomcheck.spec import parsing

JSON = Any
# spec/events.toml, kernel = true: the types the fold handles; no caller may resume with one.
KERNEL_TYPES = frozenset({
    "EXECUTION_STARTED", "EXECUTION_SUSPENDED", "EXECUTION_RESUMED", "EXECUTION_COMPLETED",
    "EXECUTION_FAILED", "EXECUTION_CANCELLED", "EXECUTION_MIGRATED", "STEP_STARTED", "STEP_COMPLETED",
    "STEP_FAILED", "EFFECT_INDOUBT", "DECISION_RECORDED", "APPROVAL_GRANTED", "RESOURCE_METERED",
    "QUOTA_EXCEEDED", "SAFETY_BLOCKED", "EGRESS_DENIED", "EFFECT_DENIED", "OUTCOME_RECORDED"})
EMIT_ALLOWED = frozenset({"RESOURCE_METERED", "QUOTA_EXCEEDED", "SAFETY_BLOCKED", "EGRESS_DENIED",
                          "EFFECT_DENIED", "OUTCOME_RECORDED", "DECISION_RECORDED"})
TERMINAL = frozenset({"completed", "failed", "cancelled"})
IN_DOUBT = "EffectInDoubtResolved"
FEATURES = ["fold", "recover", "resume-as", "load-log", "restart", "effect-ledger",
            "input-validation", "resume-schemas"]
PROGRAMS = Draft202012Validator(json.loads(
    (files("loomcheck") / "spec" / "schemas" / "flow-program.schema.json").read_text()))


class NotJson(ValueError):
    pass


def plain(value: JSON) -> JSON:
    """A deep copy of a JSON value, refusing anything that is not one. Iterative: the suite
    sends values nested deeper than Python's recursion limit."""
    root: list[JSON] = [None]
    stack: list[tuple[JSON, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise NotJson(f"{item!r} is no JSON number")
        if item is None or isinstance(item, (bool, int, float, str)):
            parent[key] = item
        elif isinstance(item, list):
            parent[key] = copy = [None] * len(item)
            stack.extend((child, copy, i) for i, child in enumerate(item))
        elif isinstance(item, dict):
            parent[key] = copy = {}
            for name, child in item.items():
                if not isinstance(name, str):
                    raise NotJson(f"object key {name!r} is not text")
                copy[name] = None
                stack.append((child, copy, name))
        else:
            raise NotJson(f"a {type(item).__name__} is no JSON value")
    return root[0]


def same(a: JSON, b: JSON) -> bool:
    """Equal as JSON (true is not 1, 1 is not 1.0), iteratively."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


def answers(variables: dict[str, JSON]) -> list[JSON]:
    """The ordered answer list (ADR 0057); a pre-1.16 snapshot's lone _resumePayload is one entry."""
    if isinstance(variables.get("_resumePayloads"), list):
        return list(variables["_resumePayloads"])
    return [variables["_resumePayload"]] if "_resumePayload" in variables else []


def parked_on(state: dict[str, JSON]) -> JSON:
    condition = state.get("suspendedOn")
    return condition.get("on") if isinstance(condition, dict) else None


def fold_events(events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None) -> dict[str, JSON]:
    s = plain(snapshot) if snapshot else {"sequence": 0, "status": "pending", "flowId": None,
                                          "suspendedOn": None, "variables": {}, "steps": {},
                                          "output": None, "error": None}
    v, steps = s.setdefault("variables", {}), s.setdefault("steps", {})
    for event in events:
        kind, p = event.get("type"), event.get("payload")
        o = p if isinstance(p, dict) else {}
        s["sequence"] = event.get("seq", s.get("sequence", 0) + 1)
        step = o.get("stepId") if isinstance(o.get("stepId"), str) else None
        if kind == "EXECUTION_STARTED":
            s.update(status="running", flowId=o.get("flowId"))
            v["_input"] = o.get("input")
        elif kind == "EXECUTION_SUSPENDED":
            s.update(status="suspended", suspendedOn=o.get("condition"))
        elif kind == "EXECUTION_RESUMED":
            # ADR 0104 D3: a null answering no suspend point only changes the status.
            answering = s.get("status") == "suspended" and parked_on(s) != IN_DOUBT
            if p is not None or answering:
                v["_resumePayloads"] = answers(v) + [p]
                v["_resumePayload"] = p
            s.update(status="running", suspendedOn=None)
        elif kind == "EXECUTION_COMPLETED":
            s.update(status="completed", output=o.get("output"))
        elif kind == "EXECUTION_FAILED":
            s.update(status="failed", error=o.get("error"))
        elif kind == "EXECUTION_CANCELLED":
            s["status"] = "cancelled"
        elif kind == "EXECUTION_MIGRATED":  # ADR 0056 D2
            s["flowId"] = o.get("toFlow")
            entry = {"fromFlow": o.get("fromFlow"), "toFlow": o.get("toFlow")}
            if "migratedInput" in o:
                v["_input"], entry["stateMigrated"] = o["migratedInput"], True
            v["_migrations"] = list(v.get("_migrations", [])) + [entry]
        elif kind == "STEP_STARTED" and step is not None:
            steps[step] = {"status": "started", "attempt": o.get("attempt", 1), "output": None}
        elif kind in ("STEP_COMPLETED", "STEP_FAILED") and step is not None:
            frame = steps.setdefault(step, {"status": "started", "attempt": 1, "output": None})
            if kind == "STEP_COMPLETED":
                frame.update(status="completed", output=o.get("output"))
            else:
                frame.update(status="failed", error=o.get("error"))
    return s


@dataclass
class Execution:
    log: list[dict[str, JSON]]
    snapshot: dict[str, JSON] | None = None
    effects: list[dict[str, JSON]] = field(default_factory=list)  # the outside world: survives crashes

    def state(self) -> dict[str, JSON]:
        return fold_events(self.log, self.snapshot)

    def append(self, kind: str, payload: JSON) -> None:
        last = self.log[-1]["seq"] if self.log else (self.snapshot or {}).get("sequence", 0)
        self.log.append({"seq": last + 1, "type": kind, "payload": plain(payload)})

    def emit(self, kind: str, payload: JSON) -> None:
        """Emits re-run on every run; a fact the log already holds is not appended again."""
        if not any(e["type"] == kind and same(e["payload"], payload) for e in self.log):
            self.append(kind, payload)


def run(ex: Execution, program: dict[str, JSON]) -> bool:
    """Run the flow from the top until it parks or ends; True when a crash fault fired."""
    state = ex.state()
    given, used, seen = answers(state["variables"]), 0, []
    for op in program["body"]:
        kind = op["op"]
        if kind == "step":
            frame = state["steps"].get(op["id"])
            if frame and frame["status"] == "completed":
                continue  # replayed: the recorded output stands
            attempt = frame["attempt"] + 1 if frame else 1
            ex.append("STEP_STARTED", {"stepId": op["id"], "attempt": attempt, "kind": "idempotent"})
            crash = op.get("crash") or {}
            dies = bool(crash) and attempt in crash.get("attempts", [1])
            if dies and crash["at"] == "before-effect":
                return True
            ex.effects.append({"stepId": op["id"], "attempt": attempt})
            if dies:
                return True
            ex.append("STEP_COMPLETED", {"stepId": op["id"], "output": op.get("output"), "attempt": attempt})
        elif kind == "suspend":
            if used == len(given):  # no recorded answer left for this gate: park
                ex.append("EXECUTION_SUSPENDED", {"condition": {"on": op["on"]}})
                return False
            seen.append({"gate": used, "on": op["on"], "value": given[used]})
            used += 1
        elif kind == "observe":
            for observation in seen:
                ex.emit("loomcheck.observed", observation)
            seen = []
        elif kind == "input":
            ex.emit("loomcheck.input", {"value": state["variables"].get("_input")})
        elif kind == "emit" and op["type"] in KERNEL_TYPES:  # ADR 0104 D1: flow code writes no kernel state
            ex.append("EXECUTION_FAILED", {"error": {"type": "EmitRefusedError", "reason": "kernel-type",
                                                     "message": f"flows may not write {op['type']}"}})
            return False
        elif kind == "emit":
            ex.emit(op["type"], op.get("payload"))
        elif kind == "complete":
            ex.append("EXECUTION_COMPLETED", {"output": op.get("output")})
            return False
    ex.append("EXECUTION_COMPLETED", {"output": None})
    return False


def unsupported(program: dict[str, JSON]) -> str | None:
    """What a valid program asks for that this kernel does not declare (it is never sent one)."""
    for op in program["body"]:
        if op["op"] in ("sleep", "parallel", "decide") or op.get("kind", "idempotent") != "idempotent" \
                or op.get("emits") or op.get("meta") or (op["op"] == "emit" and op["type"] in EMIT_ALLOWED) \
                or any(op.get(k) is not None for k in ("view", "viewDigest", "timeout")):
            return f"small-kernel does not implement {json.dumps(op)[:200]}"
    return None


def refuse(error: str, reason: str, message: str) -> Outcome:
    return Outcome.refused(error, reason, message)


class SmallKernel:
    def __init__(self) -> None:
        self.flows: dict[str, dict[str, JSON]] = {}
        self.runs: dict[str, Execution] = {}

    def hello(self) -> Hello:
        return Hello(name="small-kernel", version="0.1.0", eventSchema="1.20.0", features=FEATURES)

    def reset(self) -> None:
        self.flows, self.runs = {}, {}

    def restart(self) -> None:
        """Nothing to forget: every operation reads the store afresh."""

    def close(self) -> None:
        pass

    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        try:
            program = plain(program)
        except NotJson as exc:
            return refuse("FlowDefinitionError", "invalid-program", f"program is not data: {exc}")
        problem = next(PROGRAMS.iter_errors(program), None)
        schemas = [program.get("inputSchema")] + list((program.get("resumeSchemas") or {}).values())
        why = problem.message if problem else next(filter(None, (parsing.check_schema(s) for s in schemas if s)), None)
        if why or not isinstance(flow_id, str):
            return refuse("FlowDefinitionError", "invalid-program", f"cannot accept flow {flow_id!r}: {why}")
        if gap := unsupported(program):
            raise NotImplementedError(gap)
        self.flows[flow_id] = program
        return Outcome.accepted()

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        try:
            value = plain(input)
        except NotJson as exc:
            return refuse("InputValidationError", "invalid-input", f"input cannot be stored: {exc}")
        if not isinstance(execution_id, str):
            return refuse("InputValidationError", "invalid-input", "execution ids are text")
        if flow_id not in self.flows:
            return refuse("FlowDefinitionError", "unknown-flow", f"no flow called {flow_id!r}")
        if execution_id in self.runs:
            return refuse("FlowDefinitionError", "duplicate-execution", f"{execution_id!r} exists already")
        program = self.flows[flow_id]
        if program.get("validateInput") and program.get("inputSchema") is not None:
            parsed = parsing.parse(program["inputSchema"], value)
            if isinstance(parsed, parsing.Invalid):
                return refuse("InputValidationError", "invalid-input", f"input at {parsed.field}: {parsed.message}")
            value = parsed.value
        ex = self.runs[execution_id] = Execution([])
        ex.append("EXECUTION_STARTED", {"flowId": flow_id, "input": value})
        return self._drive(ex)

    def _drive(self, ex: Execution) -> Outcome:
        return Outcome.accepted(crashed=run(ex, self.flows[ex.state()["flowId"]]))

    def _admit(self, execution_id: str, event_type: str, payload: JSON,
               target: str | None = None) -> Outcome | tuple[Execution, dict[str, JSON], JSON]:
        """The ingress of resume (target None) and resume_as: refuse before anything is appended."""
        if event_type in KERNEL_TYPES:
            return refuse("ResumeRefusedError", "kernel-namespace", f"{event_type} belongs to the kernel")
        ex = self.runs.get(execution_id)
        if ex is None:
            return refuse("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        state = ex.state()
        flow_id = state["flowId"] if target is None else target
        parked = state["status"] == "suspended"
        if target is None and not parked:
            return refuse("ResumeRefusedError", "not-suspended", f"execution is {state['status']}, not waiting")
        if parked and event_type != parked_on(state):  # resume_as names the RECORDED gate (ADR 0104 D1)
            return refuse("ResumeRefusedError", "gate-mismatch", f"waiting for {parked_on(state)!r}")
        if flow_id not in self.flows:
            return refuse("FlowDefinitionError", "unknown-flow", f"no flow called {flow_id!r}")
        try:
            value = plain(payload)
        except NotJson as exc:
            return refuse("ResumePayloadValidationError", "invalid-payload", f"answer cannot be stored: {exc}")
        schemas = self.flows[flow_id].get("resumeSchemas") or {}
        if parked and event_type in schemas:  # ADR 0077: parsed before the append, own keys only
            parsed = parsing.parse(schemas[event_type], value)
            if isinstance(parsed, parsing.Invalid):
                return refuse("ResumePayloadValidationError", "invalid-payload",
                              f"answer field {parsed.field}: {parsed.message}")
            value = parsed.value
        return ex, state, value

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        admitted = self._admit(execution_id, event_type, payload)
        if isinstance(admitted, Outcome):
            return admitted
        ex, _, value = admitted
        ex.append(event_type, value)
        ex.append("EXECUTION_RESUMED", value)
        return self._drive(ex)

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: dict[str, JSON] | None = None) -> Outcome:
        admitted = self._admit(execution_id, event_type, payload, target=flow_id)
        if isinstance(admitted, Outcome):
            return admitted
        ex, state, value = admitted
        ex.append("EXECUTION_MIGRATED", {"fromFlow": state["flowId"], "toFlow": flow_id})
        ex.append(event_type, value)
        if state["status"] == "suspended":  # ADR 0104 D1's table: only a parked gate is answered
            ex.append("EXECUTION_RESUMED", value)
        elif state["status"] in TERMINAL:
            ex.append("EXECUTION_RESUMED", None)  # re-opens it, answering nothing
        return self._drive(ex)

    def recover(self, execution_id: str) -> Outcome:
        ex = self.runs.get(execution_id)
        if ex is None:
            return refuse("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        state = ex.state()
        if state["status"] == "suspended":
            return refuse("ResumeRefusedError", "not-suspended", "a parked execution waits for its answer")
        if state["status"] in TERMINAL:
            return refuse("ResumeRefusedError", "terminal", f"execution already {state['status']}")
        if state["flowId"] not in self.flows:
            return refuse("FlowDefinitionError", "unknown-flow", f"no flow called {state['flowId']!r}")
        ex.append("EXECUTION_RECOVERED", {})  # ADR 0104 D1: answers no gate
        return self._drive(ex)

    def recover_abandoned(self) -> list[str]:
        crashed = [eid for eid, ex in self.runs.items() if ex.state()["status"] in ("running", "pending")]
        return [eid for eid in crashed if self.recover(eid).ok]

    def load(self, execution_id: str, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> Outcome:
        if execution_id in self.runs:
            return refuse("FlowDefinitionError", "duplicate-execution", f"{execution_id!r} exists already")
        try:
            log, snap = plain(events), plain(snapshot)
        except NotJson as exc:
            return refuse("InputValidationError", "invalid-input", f"log cannot be stored: {exc}")
        base = (snap or {}).get("sequence", 0)
        for i, event in enumerate(log):
            event.setdefault("seq", base + i + 1)
            event.setdefault("payload", None)
        self.runs[execution_id] = Execution(log, snap)
        return Outcome.accepted()

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        ex = self.runs.get(execution_id)
        return plain(ex.log) if ex else []

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        ex = self.runs.get(execution_id)
        return plain(ex.state() if ex else fold_events([]))

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        return plain(fold_events(plain(events), plain(snapshot)))

    def effects(self, execution_id: str) -> list[dict[str, JSON]]:
        ex = self.runs.get(execution_id)
        return plain(ex.effects) if ex else []


def make() -> SmallKernel:
    return SmallKernel()
