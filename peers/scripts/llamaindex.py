"""The LlamaIndex Workflows adapter (peers/llamaindex.py) as LlamaIndex source: each
flow a `Workflow` with one `@step` whose body awaits `ctx.wait_for_event` at each gate,
each execution's durable state its serialized context (`ctx.to_dict()` saved at every
park and end, `Context.from_dict` before every answer), and the driver operations as the
adapter's run / send_event / cancel_run calls.

The adapter runs its (synchronous) walker on one worker thread and calls the step's context
back on the event loop. A script needs no thread: the flow body is written out as the async
step LlamaIndex's users write. Two lines keep what that thread decides: a lock (runs of the
body one at a time, in the order LlamaIndex started them) and a turn of the loop before each
call into LlamaIndex (where LlamaIndex can cancel a run part-way). Without them, the few
programs where LlamaIndex runs the step twice at once log differently from the adapter.
"""

from __future__ import annotations

from typing import Any

from loomcheck.peers.scripts import Translation, crash_attempts
from loomcheck.contract.sourcetext import escaped
from loomcheck.spec.programs import StepOp

JSON = Any

SETUP = '''
# -- LlamaIndex, as the adapter drives it (peers/llamaindex.py) ---------------------------
LOOP = asyncio.new_event_loop()  # one loop for the whole script: the adapter keeps one for all its calls
SETTLE_SECONDS = 30.0            # a run that neither idles nor ends in this time is a hang
SAVED = {}     # execution -> ctx.to_dict() as JSON text: the durable state, saved at every park and end
RESULTS = {}   # execution -> the handler's result
ERRORS = {}    # execution -> how the run failed
PENDING = {}   # execution -> (event type, payload): an answer sent, not yet taken by a run of the step
STEPS_KEY, GATES_KEY, INPUT_KEY = "loomcheck_steps", "loomcheck_gates", "loomcheck_input"  # ctx.store keys
# LlamaIndex may run the step several times at once (a restored context re-runs it per waiter).
# The adapter runs the flow body on one worker thread, so those runs go one at a time, in the
# order LlamaIndex started them; this lock does the same here.
ONE_BODY_AT_A_TIME = asyncio.Lock()


class _PeerFailed(RuntimeError):
    """LlamaIndex raised something no refusal stands for (named as the adapter's, so the outcome label is too)."""


def waiter_id(index, condition):
    """One waiter per call site, as the docs ask; it names the gate so the saved context says what it waits for."""
    return json.dumps({"gate": index, "condition": condition}, sort_keys=True)


def gate_of(waiter):
    try:
        decoded = json.loads(waiter)
        return int(decoded["gate"]), decoded["condition"]
    except (ValueError, KeyError, TypeError):
        return None


def waiting_on(context):
    """The condition of the first unresolved waiter of a serialized context (its id names it)."""
    waiters = [w for worker in context.get("workers", {}).values() for w in worker.get("collected_waiters", [])]
    waiting = sorted((g for w in waiters if w.get("resolved_event") is None
                      for g in [gate_of(w["waiter_id"])] if g is not None), key=lambda g: g[0])
    return waiting[0][1] if waiting else None


async def loop_turn():
    """Give the event loop a turn before a call into LlamaIndex, as a step awaiting real work
    does: LlamaIndex can cancel the run there. The adapter's body runs on a thread, so each of
    its calls into LlamaIndex is such a turn; without it a run could not stop part-way."""
    await asyncio.sleep(0)


async def remember(ctx, key, name, value, count=False):
    """Note in the workflow's state store what LlamaIndex handed the flow (what the adapter's read_state reads).
    Only a record: LlamaIndex has no step memo, and the flow does not read it back."""
    await loop_turn()
    async with ctx.store.edit_state() as state:
        table = dict(state.get(key, {}) or {})
        runs = (table.get(name) or {}).get("runs", 0) if count else 0
        table[name] = {"output": value, "runs": runs + 1} if count else value
        state[key] = table


def inline(step_id, body):
    return body()  # LlamaIndex has no step memo: the body runs on every run of the step


async def durable_step(ctx, step_id, value):
    await remember(ctx, STEPS_KEY, step_id, value, count=True)
    return value


async def gate(ctx, index, condition):
    """The wait at a gate: the gate's name is the wait's requirement, matched as event.on == name."""
    await loop_turn()
    answer = await ctx.wait_for_event(
        HumanResponseEvent, waiter_event=InputRequiredEvent(condition=condition, gate=index),
        waiter_id=waiter_id(index, condition), requirements={"on": condition["on"]}, timeout=None)
    value = getattr(answer, "response", None)
    await remember(ctx, GATES_KEY, str(index), value)
    return value


async def begin_run(execution, ctx, ev):
    """The top of every run of the step: LlamaIndex runs it after an answer was sent, so it took the answer."""
    pending = PENDING.pop(execution, None)
    if pending is not None:
        note(execution, pending[0], pending[1])
        note(execution, "EXECUTION_RESUMED", pending[1])
    input = getattr(ev, "input", None)  # a finished context re-run starts from a default StartEvent: None
    async with ctx.store.edit_state() as state:
        state[INPUT_KEY] = input
    return input


def workflow_for(execution):
    """A new instance of the execution's flow (as it is defined now), as the adapter makes one per run."""
    workflow = DEFINED[FLOW_OF[execution]](timeout=None)
    workflow.execution = execution
    return workflow


# -- running: one operation on the loop, a run followed until it idles or ends -------------
def drive(operation):
    """Run one operation; afterwards no run of the workflow is left going."""
    handlers = []

    async def body():
        try:
            return await asyncio.wait_for(operation(handlers), SETTLE_SECONDS)
        finally:
            for handler in handlers:
                if not handler.is_done():
                    await handler.cancel_run()

    try:
        return LOOP.run_until_complete(body())
    except (WorkerCrash, EmitRefused):
        raise
    except Exception as exc:  # LlamaIndex's own failure: the operation raises, as the adapter's does
        raise _PeerFailed(f"{type(exc).__name__}: {ascii(str(exc))[1:-1]}") from exc


async def until_quiet(handler):
    """Follow the stream until the run idles or ends: "idle", "ended", or "dropped" when
    LlamaIndex reports the event just sent as unhandled (and is idle after it)."""
    if handler.is_done():
        return "ended"
    async for event in handler.stream_events(expose_internal=True):
        if isinstance(event, UnhandledEvent) and event.idle:
            return "dropped"
        if isinstance(event, WorkflowIdleEvent):
            return "idle"
        if isinstance(event, StopEvent):
            return "ended"
    return "ended"  # the stream closes when the run fails


def save(execution, handler):
    SAVED[execution] = json.dumps(handler.ctx.to_dict())


async def settle_run(execution, handler, quiet):
    """How the run ended, as LlamaIndex reports it; the context is saved either way."""
    if quiet == "ended":
        try:
            result = await handler
        except WorkerCrash as crash:
            return ("crashed", str(crash))
        except EmitRefused as refused:
            ERRORS[execution] = {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(refused)}
            save(execution, handler)
            return ("failed", ERRORS[execution])
        RESULTS[execution] = result
        save(execution, handler)
        return ("completed", result)
    save(execution, handler)
    await handler.cancel_run()  # the documented pause between human responses: save the context, stop the run
    on = waiting_on(json.loads(SAVED[execution]))
    if on is None:
        raise RuntimeError("LlamaIndex went idle with no unresolved waiter")
    return ("parked", on)


def settle(execution, ending):
    kind, value = ending
    print(f"  LlamaIndex: {kind} {value!r}")
    if kind == "parked":
        note(execution, "EXECUTION_SUSPENDED", {"condition": value})
    elif kind == "completed":
        note(execution, "EXECUTION_COMPLETED", {"output": value})
    elif kind == "failed":
        note(execution, "EXECUTION_FAILED", {"error": value})
    else:
        return "ok:crashed"  # the worker died: nothing more is written
    return "ok"


def note_repark(execution, handler):
    """The restored run went idle before the answer was sent. When it ran the step on the way
    (the re-ping, or a new run over a finished context), that was a park of its own."""
    if LOGS[execution][-1]["type"] == "EXECUTION_SUSPENDED":
        return  # nothing ran: still the park already noted
    condition = waiting_on(json.loads(json.dumps(handler.ctx.to_dict())))
    if condition is not None:
        print("  LlamaIndex: the restored run ran the step before any answer was sent (the re-ping)")
        settle(execution, ("parked", condition))


async def run_start(execution, input, handlers):
    handler = workflow_for(execution).run(start_event=StartEvent(input=input))
    handlers.append(handler)
    return await settle_run(execution, handler, await until_quiet(handler))


async def run_answer(execution, event_type, payload, handlers):
    """The documented resume: restore the saved context, run, send the human's answer."""
    workflow = workflow_for(execution)
    handler = workflow.run(ctx=Context.from_dict(workflow, json.loads(SAVED[execution])))
    handlers.append(handler)
    # Wait for the restore's re-ping to settle: sending right after run() races it (the re-run
    # re-registers the waiter unresolved and the answer is lost).
    quiet = await until_quiet(handler)
    print(f"  LlamaIndex: run(ctx=Context.from_dict(saved context)) -> {quiet}")
    if quiet == "ended":
        return await settle_run(execution, handler, quiet)
    note_repark(execution, handler)
    PENDING[execution] = (event_type, payload)
    print(f"  LlamaIndex: send_event(HumanResponseEvent(on={event_type!r}, response={payload!r}))")
    await handler.send_event(HumanResponseEvent(on=event_type, response=payload))
    quiet = await until_quiet(handler)
    if quiet == "dropped" and execution in PENDING:  # no waiter and no step took it
        PENDING.pop(execution)
        await handler.cancel_run()  # the saved context stays the durable state
        return None
    PENDING.pop(execution, None)
    return await settle_run(execution, handler, quiet)


# -- the operations, with the adapter's own checks before LlamaIndex sees them -------------
def start(execution, flow_id, input):
    if flow_id not in DEFINED:
        return "refused:unknown-flow"
    if execution in FLOW_OF:  # one saved context per id: a second would overwrite it
        return "refused:duplicate-execution"
    FLOW_OF[execution] = flow_id
    note(execution, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
    return settle(execution, drive(lambda handlers: run_start(execution, input, handlers)))


def resume(execution, event_type, payload):
    if execution not in SAVED:  # no saved context: nothing for from_dict to restore
        return "refused:unknown-execution"
    ending = drive(lambda handlers: run_answer(execution, event_type, payload, handlers))
    if ending is None:
        # LlamaIndex's one verdict on an answer: UnhandledEvent, no waiter's requirements matched.
        print(f"  LlamaIndex: UnhandledEvent: no waiter or step took {event_type!r}; the saved context is kept")
        return "refused:gate-mismatch"
    return settle(execution, ending)
'''

STATE = '''
# -- what LlamaIndex itself holds of each execution: the saved context (what read_state reads) --
print()
for execution in FLOW_OF:
    if execution not in SAVED:
        print(f"LlamaIndex's saved context of {execution}: none")
        continue
    context = json.loads(SAVED[execution])
    waiters = [(w["waiter_id"], json.loads(w["resolved_event"])["value"]["_data"].get("response")
                if w.get("resolved_event") else "unresolved")
               for worker in context.get("workers", {}).values() for w in worker.get("collected_waiters", [])]
    store = {k: json.loads(v) if isinstance(v, str) else v
             for k, v in context.get("state", {}).get("state_data", {}).get("_data", {}).items()}
    print(f"LlamaIndex's saved context of {execution}: is_running {context.get('is_running')}, "
          f"waiters (id, answer) {waiters!r}, state store {store!r}, result {RESULTS.get(execution)!r}")
'''


class LlamaIndexScript(Translation):
    peer = "LlamaIndex Workflows"
    install = "pip install llama-index-workflows"
    calls = ('start', 'resume')

    def imports(self) -> list[str]:
        return ["import asyncio", "",
                "from workflows import Context, Workflow, step",
                "from workflows.events import (HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent, "
                "UnhandledEvent,", "                              WorkflowIdleEvent)"]

    def setup(self) -> list[str]:
        return SETUP.strip("\n").splitlines()

    def flow(self, flow_id: str, name: str, body: list[str]) -> list[str]:
        return [f"class {name}(Workflow):  # flow '{escaped(flow_id)}': one step, re-run by LlamaIndex from its top",
                "    @step",
                "    async def flow(self, ctx: Context, ev: StartEvent) -> StopEvent:",
                "        input = await begin_run(self.execution, ctx, ev)",
                "        async with ONE_BODY_AT_A_TIME:",
                "            return StopEvent(result=await self.body(self.execution, ctx, input))",
                "",
                "    async def body(self, x, ctx, input):  # the flow program, op by op",
                *["    " + line for line in body]]

    def step(self, op: StepOp) -> str:
        return f"await durable_step(ctx, {op.id!r}, run_step(x, {op.id!r}, {op.output!r}, {crash_attempts(op)!r}, inline))"

    def gate(self, index: int, condition: dict[str, JSON]) -> str:
        return f"await gate(ctx, {index}, {condition!r})"

    def input(self) -> str:
        return "input"

    def state(self) -> list[str]:
        return STATE.strip("\n").splitlines()
