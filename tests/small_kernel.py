"""A small in-memory kernel written as a new user would, from docs/driver.md and the ADRs alone:
one event list per execution, folded on every read; the flow re-runs from the top each time.
Where the ADRs leave a choice open it makes its own (messages, an open step's status, extra
payload fields, variables absent until their first value). `make()` is the factory."""

from __future__ import annotations

import functools
import json
import math
from importlib.resources import files
from typing import Any, Callable

from jsonschema import Draft202012Validator

from loomcheck.contract.driver import Hello, Outcome
from loomcheck.spec import parsing

JSON = Any
Log = list[dict[str, JSON]]
EMIT_ALLOWED = frozenset("RESOURCE_METERED QUOTA_EXCEEDED SAFETY_BLOCKED EGRESS_DENIED EFFECT_DENIED "
                         "OUTCOME_RECORDED DECISION_RECORDED".split())
# spec/events.toml, kernel = true: the types the fold handles; no caller may resume with one.
KERNEL_TYPES = EMIT_ALLOWED | set("EXECUTION_STARTED EXECUTION_SUSPENDED EXECUTION_RESUMED EXECUTION_COMPLETED "
                                  "EXECUTION_FAILED EXECUTION_CANCELLED EXECUTION_MIGRATED STEP_STARTED "
                                  "STEP_COMPLETED STEP_FAILED EFFECT_INDOUBT APPROVAL_GRANTED".split())
ENDS = {"EXECUTION_COMPLETED": "completed", "EXECUTION_FAILED": "failed", "EXECUTION_CANCELLED": "cancelled"}
FEATURES = ["fold", "recover", "resume-as", "resume-schemas", "input-validation", "restart"]
PROGRAMS = Draft202012Validator(json.loads((files("loomcheck") / "spec/schemas/flow-program.schema.json").read_text()))
REFUSED, BAD_FLOW, BAD_INPUT = "ResumeRefusedError", "FlowDefinitionError", "InputValidationError"
BAD_ANSWER = "ResumePayloadValidationError"


class Refused(Exception):  # raised inside an operation, returned as data by `refusable`: nothing appended
    pass


def refusable(operation: Callable[..., Outcome]) -> Callable[..., Outcome]:
    @functools.wraps(operation)
    def guarded(*args: Any) -> Outcome:
        try:
            return operation(*args)
        except Refused as refusal:
            return Outcome.refused(*refusal.args)
    return guarded


def need(ok: bool, error: str, reason: str, message: str) -> None:
    if not ok:
        raise Refused(error, reason, message)


def plain(value: JSON, error: str = "NotJson", reason: str = "not-json") -> JSON:
    """A deep copy of a JSON value, refusing what is not one; iterative, as values nest past 1000."""
    root: list[JSON] = [None]
    stack: list[tuple[JSON, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if item is None or isinstance(item, (bool, int, str)) or isinstance(item, float) and math.isfinite(item):
            parent[key] = item
        elif isinstance(item, list) or isinstance(item, dict) and all(isinstance(k, str) for k in item):
            pairs = enumerate(item) if isinstance(item, list) else item.items()
            parent[key] = copy = [None] * len(item) if isinstance(item, list) else dict.fromkeys(item)
            stack.extend((child, copy, k) for k, child in pairs)
        else:
            raise Refused(error, reason, f"cannot be stored: {str(item)[:40]} is no JSON value")
    return root[0]


def same(a: JSON, b: JSON) -> bool:  # equal as JSON facts (true is not 1, 1 is not 1.0), iteratively
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y) or (x.keys() != y.keys() if isinstance(x, dict) else
                                      len(x) != len(y) if isinstance(x, list) else x != y):
            return False
        stack.extend(((x[k], y[k]) for k in x) if isinstance(x, dict) else zip(x, y) if isinstance(x, list) else ())
    return True


def answers(v: dict[str, JSON]) -> list[JSON]:  # ADR 0057; a pre-1.16 lone _resumePayload is one entry
    if isinstance(v.get("_resumePayloads"), list):
        return list(v["_resumePayloads"])
    return [v["_resumePayload"]] if "_resumePayload" in v else []


def parked_on(state: dict[str, JSON]) -> JSON:
    return state["suspendedOn"].get("on") if isinstance(state.get("suspendedOn"), dict) else None


def fold_events(events: Log, snapshot: dict[str, JSON] | None = None) -> dict[str, JSON]:
    s = plain(snapshot) if snapshot else {"sequence": 0, "status": "pending", "flowId": None, "suspendedOn": None,
                                          "variables": {}, "steps": {}, "output": None, "error": None}
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
        elif kind == "EXECUTION_RESUMED":  # ADR 0104 D3: a null answering no suspend point is status-only
            if p is not None or s.get("status") == "suspended" and parked_on(s) != "EffectInDoubtResolved":
                v["_resumePayloads"], v["_resumePayload"] = answers(v) + [p], p
            s.update(status="running", suspendedOn=None)
        elif kind in ENDS:
            s["status"] = ENDS[kind]
            s.update({"output": o.get("output")} if kind == "EXECUTION_COMPLETED" else
                     {"error": o.get("error")} if kind == "EXECUTION_FAILED" else {})
        elif kind == "EXECUTION_MIGRATED":  # ADR 0056 D2: the target's code from now on, maybe a new _input
            s["flowId"], moved = o.get("toFlow"), "migratedInput" in o
            v["_migrations"] = list(v.get("_migrations", [])) + [
                {"fromFlow": o.get("fromFlow"), "toFlow": o.get("toFlow"), **({"stateMigrated": True} if moved else {})}]
            v.update({"_input": o["migratedInput"]} if moved else {})
        elif kind == "STEP_STARTED" and step is not None:
            steps[step] = {"status": "started", "attempt": o.get("attempt", 1), "output": None}
        elif kind in ("STEP_COMPLETED", "STEP_FAILED") and step is not None:
            steps.setdefault(step, {"status": "started", "attempt": 1, "output": None}).update(
                {"status": "completed", "output": o.get("output")} if kind == "STEP_COMPLETED"
                else {"status": "failed", "error": o.get("error")})
    return s


def append(log: Log, kind: str, payload: JSON) -> None:
    log.append({"seq": log[-1]["seq"] + 1 if log else 1, "type": kind, "payload": plain(payload)})


def emit(log: Log, kind: str, payload: JSON) -> None:  # emits re-run; a fact already in the log is not repeated
    if not any(e["type"] == kind and same(e["payload"], payload) for e in log):
        append(log, kind, payload)


def run(log: Log, program: dict[str, JSON]) -> bool:
    """Run the flow from the top until it parks or ends; True when a crash fault fired."""
    state = fold_events(log)
    given, used, seen = answers(state["variables"]), 0, []
    for op in program["body"]:
        kind, frame = op["op"], state["steps"].get(op.get("id"))
        if kind == "step" and not (frame and frame["status"] == "completed"):  # a completed one replays
            attempt, crash = (frame["attempt"] + 1 if frame else 1), op.get("crash") or {}
            append(log, "STEP_STARTED", {"stepId": op["id"], "attempt": attempt, "kind": "idempotent"})
            if crash and attempt in crash.get("attempts", [1]):
                return True  # the worker dies, before or after the effect
            append(log, "STEP_COMPLETED", {"stepId": op["id"], "output": op.get("output"), "attempt": attempt})
        elif kind == "suspend" and used == len(given):  # no recorded answer left for this gate: park
            append(log, "EXECUTION_SUSPENDED", {"condition": {"on": op["on"]}})
            return False
        elif kind == "suspend":
            seen.append({"gate": used, "on": op["on"], "value": given[used]})
            used += 1
        elif kind == "observe":
            for observation in seen:
                emit(log, "loomcheck.observed", observation)
            seen = []
        elif kind == "input":
            emit(log, "loomcheck.input", {"value": state["variables"].get("_input")})
        elif kind == "emit" and op["type"] in KERNEL_TYPES:  # ADR 0104 D1: flow code writes no kernel state
            append(log, "EXECUTION_FAILED", {"error": {"type": "EmitRefusedError", "reason": "kernel-type",
                                                       "message": f"flows may not write {op['type']}"}})
            return False
        elif kind == "emit":
            emit(log, op["type"], op.get("payload"))
        elif kind == "complete":
            append(log, "EXECUTION_COMPLETED", {"output": op.get("output")})
            return False
    append(log, "EXECUTION_COMPLETED", {"output": None})
    return False


def unsupported(op: dict[str, JSON]) -> bool:  # an op of a feature this kernel does not declare
    return op["op"] in ("sleep", "parallel", "decide") or op.get("kind", "idempotent") != "idempotent" \
        or bool(op.get("emits") or op.get("meta")) or op["op"] == "emit" and op["type"] in EMIT_ALLOWED \
        or any(op.get(k) is not None for k in ("view", "viewDigest", "timeout"))


def parse(schema: dict[str, JSON], value: JSON, error: str, reason: str) -> JSON:
    parsed = parsing.parse(schema, value)  # ADR 0077: the parsed value is what is recorded
    need(isinstance(parsed, parsing.Parsed), error, reason, f"field {getattr(parsed, 'field', '?')}: "
         f"{getattr(parsed, 'message', '')}")
    return parsed.value


class SmallKernel:
    def __init__(self) -> None:
        self.reset()

    def hello(self) -> Hello:
        return Hello(name="small-kernel", version="0.1.0", eventSchema="1.20.0", features=FEATURES)

    def reset(self) -> None:
        self.flows: dict[str, dict[str, JSON]] = {}
        self.logs: dict[str, Log] = {}

    def restart(self) -> None:  # nothing to forget: every operation reads the store afresh
        pass

    def close(self) -> None:
        pass

    @refusable
    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        program = plain(program, BAD_FLOW, "invalid-program")
        problem = next(PROGRAMS.iter_errors(program), None)
        schemas = [program.get("inputSchema")] + list((program.get("resumeSchemas") or {}).values())
        why = problem.message if problem else next(filter(None, map(parsing.check_schema, filter(None, schemas))), None)
        need(not why and isinstance(flow_id, str), BAD_FLOW, "invalid-program", f"flow {flow_id!r} rejected: {why}")
        if gaps := [op for op in program["body"] if unsupported(op)]:  # it should never be sent one
            raise NotImplementedError(f"small-kernel does not implement {json.dumps(gaps[0])[:200]}")
        self.flows[flow_id] = program
        return Outcome.accepted()

    @refusable
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        value = plain(input, BAD_INPUT, "invalid-input")
        need(isinstance(execution_id, str), BAD_INPUT, "invalid-input", "execution ids are text")
        need(flow_id in self.flows, BAD_FLOW, "unknown-flow", f"no flow called {flow_id!r}")
        need(execution_id not in self.logs, BAD_FLOW, "duplicate-execution", f"{execution_id!r} exists already")
        program = self.flows[flow_id]
        if program.get("validateInput") and program.get("inputSchema") is not None:
            value = parse(program["inputSchema"], value, BAD_INPUT, "invalid-input")
        log = self.logs[execution_id] = []
        append(log, "EXECUTION_STARTED", {"flowId": flow_id, "input": value})
        return self._drive(log)

    def _drive(self, log: Log) -> Outcome:
        return Outcome.accepted(crashed=run(log, self.flows[fold_events(log)["flowId"]]))

    def _admit(self, execution_id: str, event_type: str, payload: JSON,
               target: str | None = None) -> tuple[Log, dict[str, JSON], JSON]:
        # The ingress of resume (target None) and resume_as: refuse before anything is appended.
        need(event_type not in KERNEL_TYPES, REFUSED, "kernel-namespace", f"{event_type} belongs to the kernel")
        need(execution_id in self.logs, REFUSED, "unknown-execution", f"no execution {execution_id!r}")
        log = self.logs[execution_id]
        state = fold_events(log)
        parked, flow_id = state["status"] == "suspended", state["flowId"] if target is None else target
        need(target is not None or parked, REFUSED, "not-suspended", f"execution is {state['status']}, not waiting")
        # resume_as must name the RECORDED gate too (ADR 0104 D1)
        need(not parked or event_type == parked_on(state), REFUSED, "gate-mismatch", f"waiting for {parked_on(state)!r}")
        need(flow_id in self.flows, BAD_FLOW, "unknown-flow", f"no flow called {flow_id!r}")
        value = plain(payload, BAD_ANSWER, "invalid-payload")
        schemas = self.flows[flow_id].get("resumeSchemas") or {}
        if parked and event_type in schemas:  # ADR 0077: parsed before the append, own keys only
            value = parse(schemas[event_type], value, BAD_ANSWER, "invalid-payload")
        return log, state, value

    @refusable
    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        log, _, value = self._admit(execution_id, event_type, payload)
        append(log, event_type, value)
        append(log, "EXECUTION_RESUMED", value)
        return self._drive(log)

    @refusable
    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: dict[str, JSON] | None = None) -> Outcome:
        log, state, value = self._admit(execution_id, event_type, payload, target=flow_id)
        append(log, "EXECUTION_MIGRATED", {"fromFlow": state["flowId"], "toFlow": flow_id})
        append(log, event_type, value)
        if state["status"] == "suspended":  # ADR 0104 D1's table: only a parked gate is answered
            append(log, "EXECUTION_RESUMED", value)
        elif state["status"] in ENDS.values():
            append(log, "EXECUTION_RESUMED", None)  # re-opens it, answering nothing
        return self._drive(log)

    @refusable
    def recover(self, execution_id: str) -> Outcome:
        need(execution_id in self.logs, REFUSED, "unknown-execution", f"no execution {execution_id!r}")
        status = fold_events(self.logs[execution_id])["status"]
        need(status != "suspended", REFUSED, "not-suspended", "a parked execution waits for its answer")
        need(status not in ENDS.values(), REFUSED, "terminal", f"execution already {status}")
        append(self.logs[execution_id], "EXECUTION_RECOVERED", {})  # ADR 0104 D1: answers no gate
        return self._drive(self.logs[execution_id])

    def recover_abandoned(self) -> list[str]:
        crashed = [eid for eid, log in self.logs.items() if fold_events(log)["status"] in ("running", "pending")]
        return [eid for eid in crashed if self.recover(eid).ok]

    def read_log(self, execution_id: str) -> Log:
        return plain(self.logs.get(execution_id, []))

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        return plain(fold_events(self.logs.get(execution_id, [])))

    def fold(self, events: Log, snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        return plain(fold_events(plain(events), plain(snapshot)))


def make() -> SmallKernel:
    return SmallKernel()
