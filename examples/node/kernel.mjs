#!/usr/bin/env node
// tiny-node-kernel: a durable-execution kernel in one small file behind loomcheck's
// driver protocol (loomcheck-driver/1, docs/protocol.md). Node 20, no dependencies.
//
//   loomcheck run --impl "stdio:node examples/node/kernel.mjs"
//
// The kernel model (docs/driver.md, DESIGN.md):
//   * an execution is an append-only log of events {seq, type, payload};
//   * its state is the fold of that log (fold() below, a pure function);
//   * a flow re-runs from the top on every resume: a completed step replays its
//     recorded output, and the i-th suspend point of a run takes the i-th entry of
//     the folded answer list variables._resumePayloads (ADR 0057), or parks;
//   * every refusal happens before anything is appended (refuse before append);
//   * approvals (ADR 0117 D2, features security and signing): a configured authenticator
//     verifies an HMAC-SHA256 over the whole event and the one park it answers, in this
//     kernel's own proof format (sign() below), not spec/signing.md's.
//
// stdout carries exactly one JSON line per request; logs go to stderr.

import { createHmac, timingSafeEqual } from "node:crypto";
import readline from "node:readline";

const PROTOCOL = "loomcheck-driver/1";
const HELLO = {
  protocol: PROTOCOL, name: "tiny-node-kernel", version: "0.1.0", eventSchema: "1.20.0",
  features: ["fold", "recover", "load-log", "security", "signing"],
};
// The clock the authenticator judges expiry by: CLOCK_START_MS of spec/names.py, the value every
// kernel's clock reads after reset. This kernel has no timers (feature timers), so it stands still.
const CLOCK_START_MS = 1_800_000_000_000;
const IN_DOUBT_GATE = "EffectInDoubtResolved";
const TERMINAL = new Set(["completed", "failed", "cancelled"]);
// What flow code may emit although it is a kernel type (ADR 0104 D1); each needs
// validation this kernel does not implement (feature emit-guard), so such emits are unsupported.
const EMIT_ALLOWED = new Set(["RESOURCE_METERED", "QUOTA_EXCEEDED", "SAFETY_BLOCKED", "EGRESS_DENIED",
  "EFFECT_DENIED", "OUTCOME_RECORDED", "DECISION_RECORDED"]);
const METER_FIELDS = ["tokens", "costUsd", "ms", "wallMs", "memBytes", "netBytes"];

// ---------------------------------------------------------------------------
// JSON helpers. Every map indexed by a string an outsider controls (step ids,
// decision ids, event types, gate names) is read with own() and written with
// put(), so "__proto__", "constructor" and friends are just names (ADR 0077).
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const own = (obj, key) => (isObject(obj) && Object.hasOwn(obj, key) ? obj[key] : undefined);
const field = (obj, key) => own(obj, key) ?? null; // a missing field reads as null
const put = (obj, key, value) =>
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
const clone = (v) => (v === undefined ? null : JSON.parse(JSON.stringify(v)));

// Key-sorted JSON text: two payloads are "the same fact" when these are equal.
function sortedJson(v) {
  if (Array.isArray(v)) return "[" + v.map(sortedJson).join(",") + "]";
  if (isObject(v)) {
    return "{" + Object.keys(v).sort().map((k) => JSON.stringify(k) + ":" + sortedJson(v[k])).join(",") + "}";
  }
  return JSON.stringify(v);
}

// Writing JSON back: JavaScript has one number type, so an integral value of 2^53
// or more is written in exponent form, which reads back as the float it came in as
// (Python would read 39327382954839390 as an int that is not the float it sent).
function toJson(v) {
  if (typeof v === "number" && Number.isInteger(v) && Math.abs(v) >= 2 ** 53 && Math.abs(v) < 1e21) {
    return v.toExponential();
  }
  if (Array.isArray(v)) return "[" + v.map((x) => (x === undefined ? "null" : toJson(x))).join(",") + "]";
  if (isObject(v)) {
    const members = Object.entries(v).filter(([, x]) => x !== undefined);
    return "{" + members.map(([k, x]) => JSON.stringify(k) + ":" + toJson(x)).join(",") + "}";
  }
  return JSON.stringify(v) ?? "null";
}

// A value a store can hold: every string and key is well-formed Unicode (a lone
// surrogate cannot be written as UTF-8), nested at most MAX_DEPTH deep (this kernel's
// own bound: its clone and JSON writers recurse, and a value appended that they cannot
// copy would leave the execution unreadable for good). Iterative, because values nest deeply.
const MAX_DEPTH = 128;
function storable(value) {
  const stack = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop();
    if (typeof v === "string" && !v.isWellFormed()) return false;
    if ((Array.isArray(v) || isObject(v)) && depth >= MAX_DEPTH) return false;
    if (Array.isArray(v)) for (const x of v) stack.push([x, depth + 1]);
    else if (isObject(v)) {
      for (const [k, sub] of Object.entries(v)) {
        if (!k.isWellFormed()) return false;
        stack.push([sub, depth + 1]);
      }
    }
  }
  return true;
}

// A refusal is data: a typed error with a reason from spec/refusals.toml.
class Refusal extends Error {
  constructor(error, reason, message) {
    super(message || reason);
    Object.assign(this, { error, reason });
  }
}
class Unsupported extends Error {}
class Failed extends Error {} // definitely did not happen (nothing was written)

// ---------------------------------------------------------------------------
// The fold: events -> state. One handler per kernel event type, in a Map, so an
// unknown type (any other string) folds as a no-op. These keys are the kernel
// namespace: a caller may not resume with one of them.
function emptyState() {
  return { sequence: 0, status: "pending", flowId: null, codeVersion: null, suspendedOn: null,
    variables: {}, steps: {}, output: null, error: null };
}

function stateFromSnapshot(snapshot) {
  const s = clone(snapshot);
  const str = (v) => (typeof v === "string" ? v : null);
  return {
    sequence: Number.isInteger(s.sequence) ? s.sequence : 0,
    status: typeof s.status === "string" && s.status ? s.status : "pending",
    flowId: field(s, "flowId"), codeVersion: str(s.codeVersion),
    suspendedOn: isObject(s.suspendedOn) ? s.suspendedOn : null,
    variables: isObject(s.variables) ? s.variables : {}, steps: isObject(s.steps) ? s.steps : {},
    output: field(s, "output"), error: field(s, "error"),
  };
}

const parkedOn = (state) => {
  const on = state.status === "suspended" ? own(state.suspendedOn, "on") : undefined;
  return typeof on === "string" ? on : null;
};
const list = (vars, key) => (Array.isArray(own(vars, key)) ? vars[key] : put(vars, key, [])[key]);
const stepFrame = (state, payload, init) => {
  const id = own(payload, "stepId");
  if (typeof id !== "string") return null;
  return own(state.steps, id) ?? put(state.steps, id, init)[id];
};

const HANDLERS = new Map(Object.entries({
  EXECUTION_STARTED(s, p) {
    s.status = "running";
    s.flowId = typeof own(p, "flowId") === "string" ? p.flowId : null;
    s.codeVersion = typeof own(p, "version") === "string" ? p.version : null;
    s.variables._input = clone(field(p, "input"));
  },
  EXECUTION_SUSPENDED(s, p) {
    s.status = "suspended";
    s.suspendedOn = isObject(own(p, "condition")) ? clone(p.condition) : {};
  },
  EXECUTION_RESUMED(s, p) {
    // ADR 0104 D3: a null resume while not parked (or parked in doubt) answers no gate.
    const statusOnly = p === null && (s.status !== "suspended" || parkedOn(s) === IN_DOUBT_GATE);
    s.status = "running";
    s.suspendedOn = null;
    if (statusOnly) return;
    list(s.variables, "_resumePayloads").push(clone(p)); // ADR 0057: the ordered answer list
    s.variables._resumePayload = clone(p); // the latest, kept for compatibility
  },
  EXECUTION_COMPLETED(s, p) { s.status = "completed"; s.output = clone(field(p, "output")); },
  EXECUTION_FAILED(s, p) { s.status = "failed"; s.error = clone(field(p, "error")); },
  EXECUTION_CANCELLED(s) { s.status = "cancelled"; },
  EXECUTION_MIGRATED(s, p) {
    const toFlow = field(p, "toFlow"), toVersion = field(p, "toVersion");
    if (typeof toFlow === "string") s.flowId = toFlow;
    s.codeVersion = typeof toVersion === "string" ? toVersion : null;
    const entry = { fromFlow: clone(field(p, "fromFlow")), toFlow: clone(toFlow),
      fromVersion: clone(field(p, "fromVersion")), toVersion: clone(toVersion) };
    if (own(p, "migratedInput") !== undefined) {
      s.variables._input = clone(p.migratedInput); // ADR 0056 D2: the fold replaces _input
      entry.stateMigrated = true;
    }
    list(s.variables, "_migrations").push(entry);
  },
  STEP_STARTED(s, p) {
    const frame = stepFrame(s, p, {});
    if (!frame) return;
    frame.status = "started";
    frame.attempt = Number.isInteger(own(p, "attempt")) ? p.attempt : (Number(frame.attempt) || 0) + 1;
  },
  STEP_COMPLETED(s, p) {
    const frame = stepFrame(s, p, { attempt: 1 });
    if (frame) Object.assign(frame, { status: "completed", output: clone(field(p, "output")) });
  },
  STEP_FAILED(s, p) {
    const frame = stepFrame(s, p, { attempt: 1 });
    if (frame) Object.assign(frame, { status: "failed", error: clone(field(p, "error")) });
  },
  EFFECT_INDOUBT(s, p) {
    const frame = stepFrame(s, p, { attempt: 1 });
    if (frame) frame.inDoubtAttempt = clone(field(p, "attempt"));
  },
  DECISION_RECORDED(s, p) {
    const id = own(p, "decisionId");
    if (typeof id !== "string") return;
    if (!isObject(own(s.variables, "_decisions"))) s.variables._decisions = {};
    put(s.variables._decisions, id, clone(field(p, "choice")));
  },
  APPROVAL_GRANTED(s, p) { list(s.variables, "_approvals").push(clone(p)); },
  RESOURCE_METERED(s, p) {
    if (!isObject(own(s.variables, "_resources"))) s.variables._resources = {};
    const resources = s.variables._resources;
    for (const name of METER_FIELDS) {
      const value = own(p, name);
      if (typeof value !== "number") continue;
      const total = (own(resources, name) ?? 0) + value;
      if (Number.isFinite(total)) resources[name] = total;
    }
  },
  QUOTA_EXCEEDED(s) {
    if (!isObject(own(s.variables, "_resources"))) s.variables._resources = {};
    s.variables._resources.exceeded = true;
  },
  ...Object.fromEntries(["SAFETY_BLOCKED", "EGRESS_DENIED", "EFFECT_DENIED", "OUTCOME_RECORDED"].map(
    (type) => [type, (s, p) => list(s.variables, "_audit").push(clone(p))])),
}));

function fold(events, base = null) {
  const state = base ? clone(base) : emptyState();
  for (const event of events) {
    const handler = typeof event.type === "string" ? HANDLERS.get(event.type) : undefined;
    if (handler) handler(state, event.payload ?? null);
    state.sequence = Number.isInteger(event.seq) ? event.seq : 0;
  }
  return state;
}

// ---------------------------------------------------------------------------
// The store: in memory, one record per execution, in creation order (a Map).
// `snapshot` is set only by an import (load) that starts after a folded prefix.
const flows = new Map(); // flow id -> program
const executions = new Map(); // execution id -> { events: [...], snapshot: {seq, state} | null }

const exists = (id) => executions.has(id);
const lastSeq = (x) => (x.events.length ? x.events.at(-1).seq : x.snapshot ? x.snapshot.seq : 0);
const stateOf = (x) => fold(x.events, x.snapshot ? { ...x.snapshot.state, sequence: x.snapshot.seq } : null);
function append(x, type, payload) {
  x.events.push({ seq: lastSeq(x) + 1, type, payload });
}
function existing(id) {
  const x = executions.get(id);
  if (!x) throw new Refusal("ResumeRefusedError", "unknown-execution", `no execution ${JSON.stringify(id)}`);
  return x;
}

// ---------------------------------------------------------------------------
// Flow programs (loomcheck-flow/1). define() checks the shape against
// spec/schemas/flow-program.schema.json and refuses an invalid one; a valid
// program that uses something this kernel does not implement is `unsupported`.
function checkProgram(program) {
  const bad = (why) => { throw new Refusal("FlowDefinitionError", "invalid-program", why); };
  const only = (obj, keys, where) => {
    if (!isObject(obj)) bad(`${where} is not an object`);
    for (const k of Object.keys(obj)) if (!keys.includes(k)) bad(`${where}: unknown field ${JSON.stringify(k)}`);
  };
  const need = (ok, where) => ok || bad(where);
  const str = (v) => typeof v === "string";
  const int = (v, min) => Number.isInteger(v) && v >= min;
  const stepIds = new Set(); // unique among the calls up to the first complete
  let completed = false;
  const checkOp = (op, where, allowed) => {
    need(isObject(op) && allowed.includes(op.op), `${where}: op must be one of ${allowed.join(", ")}`);
    const has = (k) => Object.hasOwn(op, k);
    switch (op.op) {
      case "step":
        only(op, ["op", "id", "kind", "output", "on", "crash", "emits"], where);
        need(str(op.id) && op.id.length > 0, `${where}.id: a non-empty string`);
        need(completed || !stepIds.has(op.id), `step id ${JSON.stringify(op.id)} is used twice`);
        stepIds.add(op.id);
        need(!has("kind") || ["idempotent", "non-idempotent", "human"].includes(op.kind), `${where}.kind`);
        need(!has("on") || str(op.on), `${where}.on: a string`);
        if (has("crash") && op.crash !== null) {
          only(op.crash, ["at", "attempts"], `${where}.crash`);
          need(["before-effect", "after-effect"].includes(op.crash.at), `${where}.crash.at`);
          need((op.crash.attempts === undefined || (Array.isArray(op.crash.attempts)
            && op.crash.attempts.length > 0 && op.crash.attempts.every(Number.isInteger))), `${where}.crash.attempts`);
        }
        need(!has("emits") || (Array.isArray(op.emits) && op.emits.every((e, i) =>
          (only(e, ["type", "payload"], `${where}.emits[${i}]`), str(e.type) && e.type.length > 0))), `${where}.emits`);
        need(op.kind !== "human" || ((op.crash ?? null) === null && !(op.emits ?? []).length),
          `${where}: a human step has no effect to crash in or emit from`);
        return;
      case "suspend":
        only(op, ["op", "on", "meta", "view", "viewDigest", "timeout"], where);
        need(str(op.on), `${where}.on: a string`);
        need(!has("meta") || (isObject(op.meta) &&
          !Object.hasOwn(op.meta, "viewDigest") && !Object.hasOwn(op.meta, "wakeAt")), `${where}.meta`);
        need(!has("viewDigest") || op.viewDigest === null || str(op.viewDigest), `${where}.viewDigest`);
        need(!(has("view") && (op.viewDigest ?? null) !== null), `${where}: a view or a viewDigest, not both`);
        need(!has("timeout") || op.timeout === null || int(op.timeout, 1), `${where}.timeout`);
        return;
      case "sleep": only(op, ["op", "ms"], where); need(int(op.ms, 1), `${where}.ms`); return;
      case "emit":
        only(op, ["op", "type", "payload"], where);
        need(str(op.type) && op.type.length > 0, `${where}.type: a non-empty string`);
        return;
      case "decide": only(op, ["op", "id", "choice"], where); need(str(op.id), `${where}.id`); return;
      case "complete": only(op, ["op", "output"], where); return;
      case "parallel":
        only(op, ["op", "branches"], where);
        need(Array.isArray(op.branches) && op.branches.length > 0, `${where}.branches: a non-empty list`);
        op.branches.forEach((b, i) => checkOp(b, `${where}.branches[${i}]`, ["step", "suspend", "sleep"]));
        return;
      default: only(op, ["op"], where); // observe, input
    }
  };
  only(program, ["language", "body", "inputSchema", "validateInput", "resumeSchemas"], "program");
  need(!Object.hasOwn(program, "language") || program.language === "loomcheck-flow/1", "language");
  need(Array.isArray(program.body), "body: a list of ops");
  const ALL = ["step", "suspend", "sleep", "observe", "input", "emit", "complete", "decide", "parallel"];
  program.body.forEach((op, i) => { checkOp(op, `body[${i}]`, ALL); completed ||= op.op === "complete"; });
  need((program.inputSchema ?? null) === null || isObject(program.inputSchema), "inputSchema");
  need(program.validateInput === undefined || typeof program.validateInput === "boolean", "validateInput");
  need(!program.validateInput || isObject(program.inputSchema), "validateInput needs an inputSchema");
  const schemas = program.resumeSchemas ?? null;
  need(schemas === null || (isObject(schemas) && Object.values(schemas).every(isObject)), "resumeSchemas");

  // Valid. Now: does it need a feature this kernel does not declare?
  const missing = (feature) => { throw new Unsupported(`the program needs feature ${feature}, not declared`); };
  if (program.validateInput) missing("input-validation");
  if (schemas && Object.keys(schemas).length) missing("resume-schemas");
  const calls = program.body.flatMap((op) => (op.op === "parallel" ? [op, ...op.branches] : [op]));
  for (const op of calls) {
    if (op.op === "parallel") missing("parallel");
    if (op.op === "sleep" || (op.op === "suspend" && (op.timeout ?? null) !== null)) missing("timers");
    if (op.op === "suspend" && (Object.hasOwn(op, "view") || (op.viewDigest ?? null) !== null)) missing("view-digest");
    if (op.op === "step" && op.kind === "human") missing("human-steps");
    if (op.op === "step" && op.kind === "non-idempotent" && op.crash) missing("in-doubt");
    if (op.op === "decide" || (op.op === "step" && (op.emits ?? []).length)) missing("emit-guard");
    if (op.op === "emit" && EMIT_ALLOWED.has(op.type)) missing("emit-guard");
  }
}

// ---------------------------------------------------------------------------
// The interpreter: one run of a flow, from the top, against the folded state.
// It throws Park (record the park), Crash (the worker died: record nothing more)
// or Refusal (an EmitRefusedError: the run fails).
class Park { constructor(condition) { this.condition = condition; } }
class Crash { constructor(where) { this.where = where; } }

function runFlow(program, state, events, write) {
  const vars = state.variables;
  // ADR 0057: the ordered answers; a pre-1.16 snapshot folded only the latest one.
  const answers = Array.isArray(own(vars, "_resumePayloads")) ? vars._resumePayloads
    : own(vars, "_resumePayload") !== undefined ? [vars._resumePayload] : [];
  const facts = new Set(events.map((e) => e.type + "\0" + sortedJson(e.payload)));
  const emit = (type, payload) => {
    if (HANDLERS.has(type)) throw new Refusal("EmitRefusedError", "kernel-type", `${type} is a kernel event type`);
    const key = type + "\0" + sortedJson(payload);
    if (facts.has(key)) return; // the log already holds this exact fact: emits are idempotent
    facts.add(key);
    write(type, clone(payload));
  };
  let consumed = 0; // answers taken so far in this run
  let point = 0; // position of the next suspend point in the program
  const passed = []; // suspend points passed, not yet observed
  for (const op of program.body) {
    switch (op.op) {
      case "step": {
        const frame = own(state.steps, op.id);
        if (own(frame, "status") === "completed") break; // replay: recorded, never run again
        // A started, uncompleted frame means a crashed attempt: an idempotent step runs again.
        const attempt = frame ? (Number.isInteger(frame.attempt) && frame.attempt ? frame.attempt : 1) + 1 : 1;
        const crash = op.crash ?? null;
        const dies = (at) => crash && crash.at === at && (crash.attempts ?? [1]).includes(attempt);
        write("STEP_STARTED", { stepId: op.id, attempt });
        if (dies("before-effect")) throw new Crash(`${op.id}#${attempt} before the effect`);
        if (dies("after-effect")) throw new Crash(`${op.id}#${attempt} after the effect`);
        write("STEP_COMPLETED", { stepId: op.id, output: clone(op.output) });
        break;
      }
      case "suspend": {
        const index = point++;
        if (consumed < answers.length) { // answered on an earlier resume: pass through
          passed.push({ gate: index, on: op.on, value: answers[consumed++] });
          break;
        }
        const meta = Object.entries(op.meta ?? {}).filter(([k]) => k !== "stepId"); // only the kernel sets stepId
        throw new Park(Object.fromEntries([...meta, ["on", op.on]]));
      }
      case "observe":
        for (const p of passed.splice(0)) emit("loomcheck.observed", p);
        break;
      case "input": emit("loomcheck.input", { value: own(vars, "_input") ?? null }); break;
      case "emit": emit(op.type, op.payload ?? null); break;
      case "complete": return op.output ?? null;
      default: throw new Error(`op ${op.op} is not implemented`); // checkProgram keeps these out
    }
  }
  return null;
}

// Run the flow on the folded state until it parks, ends or crashes.
function drive(x) {
  const state = stateOf(x);
  const program = flows.get(state.flowId);
  const write = (type, payload) => append(x, type, payload);
  try {
    const output = runFlow(program, state, x.events, write);
    write("EXECUTION_COMPLETED", { output });
  } catch (e) {
    if (e instanceof Park) write("EXECUTION_SUSPENDED", { condition: e.condition });
    else if (e instanceof Crash) { console.error(`crash fault: ${e.where}`); return { crashed: true }; }
    else if (e instanceof Refusal) {
      write("EXECUTION_FAILED", { error: { type: e.error, reason: e.reason, message: e.message } });
    } else throw e;
  }
  return { crashed: false };
}

// ---------------------------------------------------------------------------
// The operations. Each checks everything first, then appends.
const requireFlow = (flowId) => {
  if (!flows.has(flowId)) throw new Refusal("FlowDefinitionError", "unknown-flow", `no flow ${JSON.stringify(flowId)}`);
};

function define({ flow, program }) {
  if (typeof flow !== "string" || !storable([flow, program])) {
    throw new Refusal("FlowDefinitionError", "invalid-program", "not storable JSON");
  }
  checkProgram(program);
  flows.set(flow, clone(program));
  return { crashed: false };
}

function start({ execution, flow, input = null }) {
  if (typeof execution !== "string" || !storable(execution)) {
    throw new Refusal("InputValidationError", "invalid-input", "the execution id is not storable text");
  }
  requireFlow(flow);
  if (exists(execution)) {
    throw new Refusal("FlowDefinitionError", "duplicate-execution", `execution ${JSON.stringify(execution)} exists`);
  }
  if (!storable(input)) throw new Refusal("InputValidationError", "invalid-input", "input is not storable JSON (well-formed text, at most 128 levels deep)");
  const x = { events: [], snapshot: null };
  executions.set(execution, x);
  append(x, "EXECUTION_STARTED", { flowId: flow, input: clone(input) });
  return drive(x);
}

function resume({ execution, type, payload = null, options = null }) {
  const x = existing(execution);
  const state = stateOf(x);
  // The ingress gate, in order: kernel namespace, parked, the parked gate's name.
  if (HANDLERS.has(type)) throw new Refusal("ResumeRefusedError", "kernel-namespace", `${type} is a kernel event type`);
  const gate = parkedOn(state);
  if (gate === null) throw new Refusal("ResumeRefusedError", "not-suspended", `execution is ${state.status}`);
  if (type !== gate) {
    throw new Refusal("ResumeRefusedError", "gate-mismatch",
      `parked on ${JSON.stringify(gate)}, not ${JSON.stringify(type)}`);
  }
  const evidence = authenticate(execution, x, type, payload, options); // identity before shape (ADR 0077 D3)
  if (!storable(payload)) throw new Refusal("ResumePayloadValidationError", "invalid-payload", "not storable JSON (well-formed text, at most 128 levels deep)");
  requireFlow(state.flowId);
  if (gate === IN_DOUBT_GATE) throw new Unsupported("in-doubt verdicts need feature in-doubt, not declared");
  if (evidence !== null) append(x, "APPROVAL_GRANTED", evidence); // ADR 0117 D2: who approved
  append(x, type, clone(payload)); // the resume-typed event
  append(x, "EXECUTION_RESUMED", clone(payload)); // the answer: folds into _resumePayloads
  return drive(x);
}

function recover({ execution }) {
  const x = existing(execution);
  const state = stateOf(x);
  if (state.status === "suspended") {
    throw new Refusal("ResumeRefusedError", "not-suspended", "parked: only a resume naming its gate re-drives it");
  }
  if (TERMINAL.has(state.status)) throw new Refusal("ResumeRefusedError", "terminal", `execution is ${state.status}`);
  requireFlow(state.flowId);
  append(x, "EXECUTION_RECOVERED", {}); // ADR 0104 D1: answers no gate, so it folds to nothing
  return drive(x);
}

function recoverAbandoned() {
  const recovered = [];
  for (const [id, x] of executions) {
    const state = stateOf(x);
    if (!["running", "pending"].includes(state.status) || !flows.has(state.flowId)) continue;
    try { recover({ execution: id }); } catch (e) { if (e instanceof Refusal) continue; throw e; }
    recovered.push(id);
  }
  return recovered;
}

function load({ execution, events = [], snapshot = null }) {
  if (exists(execution)) {
    throw new Refusal("FlowDefinitionError", "duplicate-execution", `execution ${JSON.stringify(execution)} exists`);
  }
  if (typeof execution !== "string" || !storable([execution, events, snapshot]) || !Array.isArray(events)
    || !events.every((e) => isObject(e) && typeof e.type === "string") || !(snapshot === null || isObject(snapshot))) {
    throw new Refusal("FlowDefinitionError", "invalid-program", "the log cannot be imported");
  }
  const seq = snapshot && Number.isInteger(snapshot.sequence) ? snapshot.sequence : 0;
  const x = { events: [], snapshot: snapshot ? { seq, state: stateFromSnapshot(snapshot) } : null };
  for (const e of events) append(x, e.type, clone(e.payload));
  executions.set(execution, x);
  return { crashed: false };
}

function foldOp({ events = [], snapshot = null }) {
  const base = isObject(snapshot) ? stateFromSnapshot(snapshot) : null;
  const typed = events.map((e) => ({ seq: Number.isInteger(own(e, "seq")) ? e.seq : 0,
    type: own(e, "type"), payload: field(e, "payload") }));
  return fold(typed, base);
}

const readLog = ({ execution }) => executions.get(execution)?.events ?? [];
const readState = ({ execution }) => (exists(execution) ? stateOf(executions.get(execution)) : emptyState());

// ---------------------------------------------------------------------------
// Approvals (ADR 0117 D2, D3). The ADR names what a signature covers (the event type, the
// payload, discardLegacyAnswers, the actor, the expiry, and the park: execution and
// parkedAtSequence), not how it is encoded, so this kernel encodes it its own way:
//   proof = {signer, expires, sig}, sig = lowercase hex HMAC-SHA256(secret, signedText(claim))
// where signedText is a tagged list of lines of key-sorted JSON. Its own format, rather than
// spec/signing.md's, because that is the case the feature "signing" exists for: a kernel in
// another language needs neither loomcheck's canonical JSON nor its vectors to be tested.
let security = { strict: false, authenticator: null };
const PROOF_MEMBERS = "expires,sig,signer"; // exactly these: one approval has one spelling
const utf8Length = (s) => Buffer.byteLength(s, "utf8");

function secretsOf(keys, actor) {
  const material = own(keys, actor);
  if (typeof material === "string") return [material];
  return Array.isArray(material) ? material.filter((s) => typeof s === "string") : [];
}

function configure({ config }) {
  const c = isObject(config) ? config : {};
  const spec = own(c, "authenticator") ?? null;
  let authenticator = null;
  if (spec !== null) {
    const keys = isObject(own(spec, "keys")) ? clone(spec.keys) : {};
    for (const [actor, material] of Object.entries(keys)) {
      const empty = Array.isArray(material) && material.length === 0;
      if (empty || secretsOf(keys, actor).some((s) => utf8Length(s) < 16)) {
        throw new Refusal("ConfigError", "weak-secret", `a secret of ${JSON.stringify(actor)} is under 16 bytes`);
      }
    }
    const gates = Array.isArray(own(spec, "gates")) ? spec.gates.filter((g) => typeof g === "string") : [];
    authenticator = { gates: new Set(gates), keys, requireActor: own(spec, "requireActor") !== false };
  }
  if (c.strict === true && authenticator === null && own(c, "requireResumeAuthenticator") !== false) {
    // ADR 0117 D3: strict cannot default an authenticator; it needs keys only the app has.
    throw new Refusal("ConfigError", "strict-needs-authenticator", "strict needs a resume authenticator");
  }
  security = { strict: c.strict === true, authenticator };
  return { crashed: false };
}

// Round 2: the park is the newest EXECUTION_SUSPENDED in the log, never the folded tip.
function parkSeq(x) {
  if (parkedOn(stateOf(x)) === null) return null;
  for (let i = x.events.length - 1; i >= 0; i--) if (x.events[i].type === "EXECUTION_SUSPENDED") return x.events[i].seq;
  return null; // retention removed it: no approval can be bound to it
}

// The signed bytes: every field ADR 0117 D2 names, one line each. Throws for what it cannot write.
function signedText(execution, parkedAt, actor, exp, type, payload, discard) {
  if (discard !== undefined && discard !== null && discard !== false) {
    throw new Error("this kernel has no legacy-answers override to sign (feature legacy-scan)");
  }
  if (!storable(payload)) throw new Error("the payload is not storable JSON");
  return ["tiny-node-kernel approval/1", execution, parkedAt, actor, exp, type, payload, false]
    .map(sortedJson).join("\n");
}
const mac = (secret, text) => createHmac("sha256", Buffer.from(secret, "utf8")).update(text, "utf8").digest("hex");

// The approver's side: a refusal to sign is data, {refused: {reason, message}}.
function sign({ claim }) {
  const refuse = (reason, message) => ({ refused: { reason, message } });
  const event = own(claim, "event");
  const [actor, exp] = [own(claim, "actor"), own(claim, "exp")];
  const [execution, parkedAt] = [own(claim, "executionId"), own(claim, "parkedAtSequence")];
  if (!isObject(event) || typeof own(event, "type") !== "string") return refuse("not-a-claim", "no event {type, payload}");
  if (typeof actor !== "string" || !actor || !Number.isSafeInteger(exp)) return refuse("not-a-claim", "actor, exp");
  if (typeof execution !== "string" || !execution || !Number.isSafeInteger(parkedAt) || parkedAt < 1) {
    return refuse("no-park-context", "a claim names one park of one execution");
  }
  const secrets = security.authenticator ? secretsOf(security.authenticator.keys, actor) : [];
  if (!secrets.length) return refuse("unknown-actor", `no key for ${JSON.stringify(actor)}`);
  let text;
  try {
    text = signedText(execution, parkedAt, actor, exp, event.type, field(event, "payload"),
      own(claim, "discardLegacyAnswers"));
  } catch (e) {
    return refuse("unsignable", String(e.message));
  }
  return { proof: { signer: actor, expires: exp, sig: mac(secrets[secrets.length - 1], text) } };
}

// The verifier's side, in the resume ingress after the gate name and before anything is
// appended: the evidence APPROVAL_GRANTED records, or null for a gate it does not cover.
function authenticate(execution, x, type, payload, options) {
  const a = security.authenticator;
  if (a === null || !a.gates.has(type)) return null;
  const parkedAt = parkSeq(x);
  if (parkedAt === null) throw new Refusal("ResumeRefusedError", "park-not-located", "the park is no longer in the log");
  const reject = (why) => { throw new Refusal("ResumeRefusedError", "unauthenticated", why); };
  const proof = own(options, "proof");
  if (!isObject(proof) || Object.keys(proof).sort().join() !== PROOF_MEMBERS) reject("no proof of this kernel's");
  const { signer, expires, sig } = proof;
  if (typeof signer !== "string" || !signer) reject("actor-missing");
  if (!Number.isSafeInteger(expires)) reject("no-expiry");
  if (typeof sig !== "string" || !/^[0-9a-f]{64}$/.test(sig)) reject("bad-signature");
  const secrets = secretsOf(a.keys, signer);
  if (!secrets.length) reject("unknown-actor");
  let text;
  try {
    text = signedText(execution, parkedAt, signer, expires, type, payload, own(options, "discardLegacyAnswers"));
  } catch {
    reject("bad-signature");
  }
  const given = Buffer.from(sig, "utf8");
  if (!secrets.some((s) => timingSafeEqual(Buffer.from(mac(s, text), "utf8"), given))) reject("bad-signature");
  if (expires <= CLOCK_START_MS) reject("expired");
  const principal = own(options, "principal") ?? null;
  if (a.requireActor && principal !== null) {
    const actor = isObject(principal) ? own(principal, "actor") ?? null : signer + "\u0000"; // not an object: fails closed
    if (actor !== null && actor !== signer) reject("actor-mismatch");
  }
  return { actor: signer, verifiedBy: "tiny-node-kernel-hmac" };
}

// ---------------------------------------------------------------------------
// The protocol: one request per line, one response per line, in order.
const OPS = new Map(Object.entries({
  hello: (req) => {
    if (req.protocol !== PROTOCOL) throw new Failed(`this kernel speaks ${PROTOCOL} only`);
    return HELLO;
  },
  reset: () => { flows.clear(); executions.clear(); security = { strict: false, authenticator: null }; return null; },
  define, start, resume, "read-log": readLog, "read-state": readState,
  fold: foldOp, load, recover, "recover-abandoned": recoverAbandoned, configure, sign,
  "parked-at-sequence": ({ execution }) => (exists(execution) ? parkSeq(executions.get(execution)) : null),
  shutdown: () => null,
}));
// Every other op of docs/protocol.md belongs to a feature this kernel does not declare.
const FEATURE_OF = { "resume-as": "resume-as", restart: "restart", "advance-clock": "timers", effects: "effect-ledger",
  warnings: "legacy-scan", "append-events": "legacy-scan", erase: "legacy-scan",
  "truncate-prefix": "retention", "arm-kill": "kill-points" };

function handle(req) {
  const run = typeof req.op === "string" ? OPS.get(req.op) : undefined;
  if (!run) {
    const feature = own(FEATURE_OF, req.op);
    const message = feature ? `feature ${feature} is not declared` : `unknown op ${JSON.stringify(req.op)}`;
    return { error: { kind: "unsupported", definite: true, message } };
  }
  try {
    return { result: run(req) };
  } catch (e) {
    if (e instanceof Refusal) {
      return { error: { kind: "refused", definite: true, error: e.error, reason: e.reason, message: e.message } };
    }
    if (e instanceof Unsupported) return { error: { kind: "unsupported", definite: true, message: e.message } };
    if (e instanceof Failed) return { error: { kind: "failed", definite: true, message: e.message } };
    console.error(`tiny-node-kernel: ${req.op} failed:`, e);
    return { error: { kind: "failed", definite: false, message: String(e && e.message || e).slice(0, 500) } };
  }
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
input.on("line", (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    console.error(`tiny-node-kernel: not JSON: ${line.slice(0, 200)}`);
    process.stdout.write(JSON.stringify({ id: null, error: { kind: "failed", definite: true,
      message: "the request is not JSON" } }) + "\n");
    return;
  }
  const id = isObject(req) ? own(req, "id") ?? null : null;
  const response = isObject(req) ? handle(req)
    : { error: { kind: "failed", definite: true, message: "the request is not a JSON object" } };
  let text;
  try {
    text = toJson({ id, ...response });
  } catch (e) { // a result too deep to write: say so, still on one line
    text = JSON.stringify({ id, error: { kind: "failed", definite: false, message: String(e.message) } });
  }
  if (isObject(req) && req.op === "shutdown") {
    input.close();
    process.stdout.write(text + "\n", () => process.exit(0));
  } else {
    process.stdout.write(text + "\n");
  }
});
input.on("close", () => { process.exitCode = 0; }); // stdin closed: exit once stdout is flushed
