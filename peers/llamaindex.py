"""LlamaIndex Workflows through the driver interface: one step, a wait-for-event per gate,
and the serialized context (`Context.to_dict` / `Context.from_dict`) as the durable state.

    pip install 'loomcheck[llamaindex]'
    loomcheck run --impl llamaindex

How each primitive maps (LlamaIndex's own, nothing re-implemented):

    a flow execution     one run of a `Workflow` with a single `@step` (`flow`, StartEvent -> StopEvent);
                         the execution id is the workflow instance's, the input travels as the
                         StartEvent's `input` field
    the flow body        walker.run_program inside that step. LlamaIndex re-runs a step from its top
                         whenever one of its waiters is resolved ("the runtime pauses by throwing an
                         internal control-flow exception and replays the entire step", the
                         `wait_for_event` docstring), and again on every restore of a context whose
                         waiters carry requirements (it "re-pings" the step to learn them again)
    step                 the body runs inline, every time LlamaIndex runs the step. LlamaIndex has no
                         step memoisation: its docs tell the user to "keep [wait_for_event] near the
                         top of the step and make any preceding work safe to repeat", and document no
                         "do work once" mechanism. Memoising by hand in `ctx.store` would be the adapter
                         deciding that a step replays, a kernel rule the peer does not have, so the
                         adapter does not: the step's value is only *recorded* in `ctx.store`
                         (`loomcheck_steps`), the peer's durable state store, which is what read_state
                         reads. replay.step-runs-once then reports the peer's model, not an adapter gap.
    suspend (a gate)     `await ctx.wait_for_event(HumanResponseEvent, waiter_event=InputRequiredEvent(
                         condition=..., gate=i), waiter_id=<gate i and its condition>, requirements=
                         {"on": <gate name>}, timeout=None)`. The name travels where LlamaIndex carries
                         it: the waiter's requirements, matched as `getattr(event, "on") == name`; the
                         waiter id (one per call site, as the docs ask) names the gate's position and
                         condition, so the saved context says what it waits for
    park                 the run goes idle (`WorkflowIdleEvent` on the stream, `expose_internal=True`);
                         the adapter saves `handler.ctx.to_dict()` as JSON text (the durable state, kept
                         in process) and cancels the run (`handler.cancel_run()`), the documented
                         "stopping/resuming between human responses" pattern
    resume gate X with P `Context.from_dict(workflow, saved)`, `workflow.run(ctx=restored)`, wait until the
                         restored run is idle again (its re-ping settled), then
                         `handler.send_event(HumanResponseEvent(on=X, response=P))`. The docs send the
                         event right after `run`; that races the re-ping (the re-run re-registers the
                         waiter unresolved and the answer is lost), so the adapter waits, which gives
                         LlamaIndex the best chance; see the notes.
                         The answer is recorded as accepted when LlamaIndex runs the step because of it.
                         When no waiter and no step takes it, LlamaIndex drops it and says so with an
                         `UnhandledEvent` on the stream (no exception: `send_event` returns). That notice
                         is the peer's only verdict, and the adapter reports it as the refusal
                         gate-mismatch, the peer's reason (no waiter's requirements matched), whatever
                         the name was: LlamaIndex has no kernel namespace and no "not suspended" rule.
    a re-park            when the restored run ran the step before going idle (the re-ping, or a new run
                         over a finished context), that idle is witnessed as its own EXECUTION_SUSPENDED
    completion           the handler's result (`StopEvent.result`); the context is saved again
    threads              the walker is synchronous and LlamaIndex is async: the walker runs on one worker
                         thread (runs of the step one at a time, in the order LlamaIndex started them) and
                         calls the step's context back on the driver's own event loop. A run LlamaIndex
                         cancels (paused, or finished while a second run of the step was going) is
                         cancelled at the walker's next call into the peer, where an async step would be
                         cancelled at its next await; every operation drains its walkers before returning
    failure              an exception from the step (a refused kernel-type emit): the run fails

    state                the saved context: status from `is_running` and the waiters (one unresolved
                         waiter = suspended on the condition in its id), the answers from the resolved
                         waiters while parked (LlamaIndex keeps them until the step completes) and from
                         the store's `loomcheck_gates` once complete (it drops its waiters then), the
                         step values and the input the run was handed from the store, the output from
                         the handler's result

What does not map (reported not-applicable in adapters/manifests/llamaindex.toml): crash faults and
recovery (LlamaIndex's durable state is what the caller saved with to_dict at a park; in process it
keeps no journal a re-drive could continue from, so a worker death mid-step has no peer counterpart to
drive), typed answers (events are pydantic models, but a wait matches on type and requirements only and
the payload is free), human steps, in-doubt effects, parallel branches, emits of kernel events,
approvals, timers (wait_for_event has a timeout, but on the wall clock, not an injectable one),
resumeAs and state migration, legacy logs, retention.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import json
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from workflows import Context, Workflow, step
from workflows.events import (HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent, UnhandledEvent,
                              WorkflowIdleEvent)

from loomcheck.peers.base import Completed, Crashed, Ending, Failed, Parked, PeerDriver, folded_state
from loomcheck.peers.walker import EmitRefused, WorkerCrash, run_program
from loomcheck.contract.driver import Outcome

JSON = Any

STEPS_KEY = "loomcheck_steps"   # ctx.store: {stepId: {"output", "runs"}}, written when the body ran
GATES_KEY = "loomcheck_gates"   # ctx.store: {"<index>": value}, what the peer handed each gate
INPUT_KEY = "loomcheck_input"   # ctx.store: the input the last run was handed
SETTLE_SECONDS = 30.0           # a run that neither idles nor ends in this time is a hang: an error


def waiter_id(index: int, condition: dict[str, JSON]) -> str:
    """One waiter per call site, as the docs ask; it names the gate so the saved context says what it waits for."""
    return json.dumps({"gate": index, "condition": condition}, sort_keys=True)


def _gate_of(waiter: str) -> tuple[int, dict[str, JSON]] | None:
    try:
        decoded = json.loads(waiter)
        return int(decoded["gate"]), decoded["condition"]
    except (ValueError, KeyError, TypeError):
        return None


class _StepCancelled(Exception):
    """The step's task was cancelled by LlamaIndex while the walker was between two awaits."""


class _PeerFailed(RuntimeError):
    """LlamaIndex raised something no refusal stands for; the message is ASCII-safe so that
    a hostile name in it (a lone surrogate) cannot break the report that carries it."""


class _LlamaIndexPeer:
    """The walker's view of LlamaIndex inside one run of the step. The walker is synchronous,
    so it runs on a worker thread and calls the step's context back on the event loop."""

    def __init__(self, ctx: Context, loop: asyncio.AbstractEventLoop, input: JSON) -> None:
        self._ctx = ctx
        self._loop = loop
        self._input = input
        self.cancelled = False  # LlamaIndex cancelled the step's task (its run ended or was paused)

    def _check(self) -> None:
        # An async step is cancelled at its next await; every call into the peer is one.
        if self.cancelled:
            raise _StepCancelled()

    def _call(self, coroutine: Callable[[], Any]) -> Any:
        # run_coroutine_threadsafe copies this thread's context (a copy of the step's), so the
        # coroutine sees the step's worker state, as wait_for_event requires.
        self._check()
        return asyncio.run_coroutine_threadsafe(coroutine(), self._loop).result()

    def step(self, step_id: str, body: Callable[[], JSON]) -> JSON:
        self._check()
        value = body()  # LlamaIndex has no step memo: the body runs on every run of the step
        self._call(lambda: _record(self._ctx, STEPS_KEY, step_id, value, count=True))
        return value

    def gate(self, index: int, condition: dict[str, JSON]) -> JSON:
        answer = self._call(lambda: self._ctx.wait_for_event(
            HumanResponseEvent, waiter_event=InputRequiredEvent(condition=condition, gate=index),
            waiter_id=waiter_id(index, condition), requirements={"on": condition["on"]}, timeout=None))
        value = getattr(answer, "response", None)
        self._call(lambda: _record(self._ctx, GATES_KEY, str(index), value))
        return value

    def input(self) -> JSON:
        return self._input


async def _record(ctx: Context, key: str, name: str, value: JSON, count: bool = False) -> None:
    """Note in the peer's state store what the peer handed the flow (read back by read_state)."""
    async with ctx.store.edit_state() as state:
        table = dict(state.get(key, {}) or {})
        runs = (table.get(name) or {}).get("runs", 0) if count else 0
        table[name] = {"output": value, "runs": runs + 1} if count else value
        state[key] = table


class LlamaIndexDriver(PeerDriver):
    peer = "LlamaIndex Workflows"
    distribution = "llama-index-workflows"
    features: list[str] = []

    def __init__(self) -> None:
        super().__init__()
        self._loop = asyncio.new_event_loop()
        # One walker thread: runs of the step execute one at a time, in the order LlamaIndex
        # started them, as its async steps would (the walker is synchronous; the loop stays free).
        self._walker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loomcheck-llamaindex")
        self._inflight: set[asyncio.Future[Any]] = set()
        self._saved: dict[str, str] = {}        # execution -> to_dict() as JSON text: the durable state
        self._results: dict[str, JSON] = {}     # execution -> the handler's result, as LlamaIndex returned it
        self._errors: dict[str, JSON] = {}      # execution -> how the run failed
        self._pending: dict[str, tuple[str, JSON]] = {}  # an answer sent, not yet taken by a run of the step
        self._closed = False
        _live.add(self)

    # -- the workflow -------------------------------------------------------------------
    def _workflow(self, execution_id: str) -> Workflow:
        driver = self

        class LoomcheckFlow(Workflow):
            @step
            async def flow(self, ctx: Context, ev: StartEvent) -> StopEvent:
                driver._answer_taken(execution_id)
                program = driver.flows[driver.witness.flow_of(execution_id) or ""]
                input = getattr(ev, "input", None)
                async with ctx.store.edit_state() as state:
                    state[INPUT_KEY] = input
                loop = asyncio.get_running_loop()
                peer = _LlamaIndexPeer(ctx, loop, input)
                walk = loop.run_in_executor(driver._walker, contextvars.copy_context().run,
                                            run_program, program, execution_id, driver.witness, peer)
                driver._inflight.add(walk)
                walk.add_done_callback(driver._walk_done)
                try:
                    output = await asyncio.shield(walk)
                except asyncio.CancelledError:
                    peer.cancelled = True
                    raise
                return StopEvent(result=output)

        return LoomcheckFlow(timeout=None)

    def _walk_done(self, walk: "asyncio.Future[Any]") -> None:
        self._inflight.discard(walk)
        if not walk.cancelled():
            walk.exception()  # a cancelled step's walker ends in _StepCancelled: retrieved, not reported

    def _answer_taken(self, execution_id: str) -> None:
        """LlamaIndex runs the step after an answer was sent: it took the answer."""
        pending = self._pending.pop(execution_id, None)
        if pending is not None:
            self.record_answer(execution_id, *pending)

    def translation(self) -> Any:
        from loomcheck.peers.scripts.llamaindex import LlamaIndexScript

        return LlamaIndexScript()

    # -- running ------------------------------------------------------------------------
    def _drive(self, operation: Callable[[list[Any]], Any]) -> Any:
        """Run one operation on the driver's loop; afterwards no run of the peer is left going
        (a paused or finished run's step is cancelled by LlamaIndex, and its walker drained)."""
        handlers: list[Any] = []

        async def body() -> Any:
            try:
                return await asyncio.wait_for(operation(handlers), SETTLE_SECONDS)
            finally:
                for handler in handlers:
                    if not handler.is_done():
                        await handler.cancel_run()
                if self._inflight:
                    await asyncio.wait(list(self._inflight), timeout=SETTLE_SECONDS)

        try:
            return self._loop.run_until_complete(body())
        except (WorkerCrash, EmitRefused):
            raise
        except Exception as exc:  # noqa: BLE001 - the peer's own failure, reported as such
            raise _PeerFailed(f"{type(exc).__name__}: {ascii(str(exc))[1:-1]}") from exc

    @staticmethod
    async def _until_quiet(handler: Any) -> str:
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

    async def _settle_run(self, execution_id: str, handler: Any, quiet: str) -> Ending:
        """How the run ended, as LlamaIndex reports it; the context is saved either way."""
        if quiet == "ended":
            try:
                result = await handler
            except WorkerCrash as crash:
                return Crashed(str(crash))
            except EmitRefused as refused:
                error = {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(refused)}
                self._errors[execution_id] = error
                self._save(execution_id, handler)
                return Failed(error)
            self._results[execution_id] = result
            self._save(execution_id, handler)
            return Completed(result)
        self._save(execution_id, handler)
        await handler.cancel_run()  # the documented pause: save the context, stop the run
        on = self._parked_on(execution_id)
        if on is None:
            raise RuntimeError("LlamaIndex went idle with no unresolved waiter")
        return Parked(on)

    def _note_repark(self, execution_id: str, handler: Any) -> None:
        """The restored run went idle before the answer was sent. When it ran the step on the
        way (the re-ping, or a new run over a finished context), that was a park of its own:
        witnessed as such, with the condition LlamaIndex now waits on."""
        if self.witness.last_type(execution_id) == "EXECUTION_SUSPENDED":
            return  # nothing ran: still the park already witnessed
        condition = self._waiting_on(json.loads(json.dumps(handler.ctx.to_dict())))
        if condition is not None:
            self.settle(execution_id, Parked(condition))

    def _save(self, execution_id: str, handler: Any) -> None:
        self._saved[execution_id] = json.dumps(handler.ctx.to_dict())

    async def _start(self, execution_id: str, input: JSON, handlers: list[Any]) -> Ending:
        handler = self._workflow(execution_id).run(start_event=StartEvent(input=input))
        handlers.append(handler)
        return await self._settle_run(execution_id, handler, await self._until_quiet(handler))

    async def _resume(self, execution_id: str, event_type: str, payload: JSON, handlers: list[Any]) -> Ending | None:
        workflow = self._workflow(execution_id)
        restored = Context.from_dict(workflow, json.loads(self._saved[execution_id]))
        handler = workflow.run(ctx=restored)
        handlers.append(handler)
        quiet = await self._until_quiet(handler)  # the restore's re-ping settles first
        if quiet == "ended":
            return await self._settle_run(execution_id, handler, quiet)
        self._note_repark(execution_id, handler)
        self._pending[execution_id] = (event_type, payload)
        await handler.send_event(HumanResponseEvent(on=event_type, response=payload))
        quiet = await self._until_quiet(handler)
        if quiet == "dropped" and execution_id in self._pending:
            self._pending.pop(execution_id)
            await handler.cancel_run()  # the saved context stays the durable state
            return None
        self._pending.pop(execution_id, None)
        return await self._settle_run(execution_id, handler, quiet)

    # -- the driver interface ----------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        refused = self.open_execution(execution_id, flow_id, input)  # one saved context per id: a second would overwrite it
        if refused is not None:
            return refused
        return self.settle(execution_id, self._drive(lambda handlers: self._start(execution_id, input, handlers)))

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        if execution_id not in self._saved:
            # No saved context: nothing for from_dict to restore.
            return Outcome.refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        ending = self._drive(lambda handlers: self._resume(execution_id, event_type, payload, handlers))
        if ending is None:
            return Outcome.refused("ResumeRefusedError", "gate-mismatch",
                                   f"LlamaIndex reported UnhandledEvent: no waiter or step took {event_type!r}")
        return self.settle(execution_id, ending)

    # -- the peer's view ------------------------------------------------------------------
    def _context(self, execution_id: str) -> dict[str, JSON]:
        return json.loads(self._saved[execution_id])

    def _waiters(self, execution_id: str) -> list[dict[str, JSON]]:
        return [w for worker in self._context(execution_id).get("workers", {}).values()
                for w in worker.get("collected_waiters", [])]

    def _parked_on(self, execution_id: str) -> dict[str, JSON] | None:
        return self._waiting_on(self._context(execution_id))

    @staticmethod
    def _waiting_on(context: dict[str, JSON]) -> dict[str, JSON] | None:
        """The condition of the first unresolved waiter of a serialized context (its id names it)."""
        waiters = [w for worker in context.get("workers", {}).values() for w in worker.get("collected_waiters", [])]
        waiting = sorted((g for w in waiters if w.get("resolved_event") is None
                          for g in [_gate_of(w["waiter_id"])] if g is not None), key=lambda g: g[0])
        return waiting[0][1] if waiting else None

    def _store(self, execution_id: str) -> dict[str, JSON]:
        """The state store's values, as the saved context holds them (each JSON-encoded)."""
        data = self._context(execution_id).get("state", {}).get("state_data", {}).get("_data", {})
        return {k: json.loads(v) if isinstance(v, str) else v for k, v in data.items()}

    def _answers_parked(self, execution_id: str) -> list[JSON]:
        resolved = []
        for waiter in self._waiters(execution_id):
            gate = _gate_of(waiter["waiter_id"])
            if gate is not None and waiter.get("resolved_event") is not None:
                event = json.loads(waiter["resolved_event"])
                resolved.append((gate[0], event.get("value", {}).get("_data", {}).get("response")))
        return [value for _, value in sorted(resolved, key=lambda r: r[0])]

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        flow_id = self.witness.flow_of(execution_id)
        sequence = self.sequence(execution_id)
        if flow_id is None or execution_id not in self._saved:
            return folded_state(status="pending", flow_id=flow_id, sequence=sequence)
        store = self._store(execution_id)
        steps = {k: {"status": "completed", "attempt": v.get("runs", 1), "output": v.get("output")}
                 for k, v in (store.get(STEPS_KEY) or {}).items()}
        on = self._parked_on(execution_id)
        if execution_id in self._errors:
            status, answers, output = "failed", [], None
        elif on is not None:
            status, answers, output = "suspended", self._answers_parked(execution_id), None
        elif execution_id in self._results:
            gates = store.get(GATES_KEY) or {}
            answers = [gates[k] for k in sorted(gates, key=int)]
            status, output = "completed", self._results[execution_id]
        else:
            status, answers, output = "running", [], None
        return folded_state(status=status, flow_id=flow_id, sequence=sequence, input=store.get(INPUT_KEY),
                            answers=answers, suspended_on=on, steps=steps, output=output,
                            error=self._errors.get(execution_id))

    # -- lifecycle ------------------------------------------------------------------------
    def reset(self) -> None:
        super().reset()
        self._saved.clear()
        self._results.clear()
        self._errors.clear()
        self._pending.clear()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        super().close()
        self._walker.shutdown(wait=True)
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()


_live: "weakref.WeakSet[LlamaIndexDriver]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    if threading.current_thread() is threading.main_thread():
        for driver in list(_live):
            driver.close()


def make() -> LlamaIndexDriver:
    return LlamaIndexDriver()
