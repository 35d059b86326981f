"""LlamaIndex Workflows' glue: one step, a wait-for-event per gate, and the serialized context
(`Context.to_dict` / `Context.from_dict`) as the durable state. The driver (driver.py) and every
reproducer (template.py) run this same code; how each primitive maps: NOTES.md."""

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

from loomcheck.peers.session import Completed, Crashed, Done, Ending, Failed, Parked, Refused, Session, folded_state
from loomcheck.peers.walker import EmitRefused, WorkerCrash, run_program
from loomcheck.peers.witness import Witness

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


class LlamaIndexSession(Session):
    """The adapter's hold on LlamaIndex: an event loop, one walker thread, each execution's saved context."""

    def __init__(self, kernel_types: frozenset[str]) -> None:
        super().__init__(Witness(), None, kernel_types)
        self._loop = asyncio.new_event_loop()
        # One walker thread: runs of the step execute one at a time, in the order LlamaIndex
        # started them, as its async steps would (the walker is synchronous; the loop stays free).
        self._walker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="loomcheck-llamaindex")
        self._inflight: set[asyncio.Future[Any]] = set()
        self.saved: dict[str, str] = {}        # execution -> to_dict() as JSON text: the durable state
        self._results: dict[str, JSON] = {}     # execution -> the handler's result, as LlamaIndex returned it
        self._errors: dict[str, JSON] = {}      # execution -> how the run failed
        self._pending: dict[str, tuple[str, JSON]] = {}  # an answer sent, not yet taken by a run of the step
        self._closed = False
        _live.add(self)

    # -- the workflow -------------------------------------------------------------------
    def _workflow(self, execution_id: str) -> Workflow:
        session = self

        class LoomcheckFlow(Workflow):
            @step
            async def flow(self, ctx: Context, ev: StartEvent) -> StopEvent:
                session._answer_taken(execution_id)
                program = session.programs[session.witness.flow_of(execution_id) or ""]
                input = getattr(ev, "input", None)
                async with ctx.store.edit_state() as state:
                    state[INPUT_KEY] = input
                loop = asyncio.get_running_loop()
                peer = _LlamaIndexPeer(ctx, loop, input)
                walk = loop.run_in_executor(session._walker, contextvars.copy_context().run,
                                            run_program, program, execution_id, session.witness, peer,
                                            session.kernel_types)
                session._inflight.add(walk)
                walk.add_done_callback(session._walk_done)
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

    # -- running ------------------------------------------------------------------------
    def _drive(self, operation: Callable[[list[Any]], Any]) -> Any:
        """Run one operation on the session's loop; afterwards no run of the peer is left going
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
        self.saved[execution_id] = json.dumps(handler.ctx.to_dict())

    async def _start(self, execution_id: str, input: JSON, handlers: list[Any]) -> Ending:
        handler = self._workflow(execution_id).run(start_event=StartEvent(input=input))
        handlers.append(handler)
        return await self._settle_run(execution_id, handler, await self._until_quiet(handler))

    async def _resume(self, execution_id: str, event_type: str, payload: JSON, handlers: list[Any]) -> Ending | None:
        workflow = self._workflow(execution_id)
        restored = Context.from_dict(workflow, json.loads(self.saved[execution_id]))
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

    # -- the operations ---------------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Done:
        refused = self.open_execution(execution_id, flow_id, input)  # one saved context per id: a second would overwrite it
        if refused is not None:
            return refused
        return self.settle(execution_id, self._drive(lambda handlers: self._start(execution_id, input, handlers)))

    def resume(self, execution_id: str, event_type: str, payload: JSON) -> Done:
        if execution_id not in self.saved:
            # No saved context: nothing for from_dict to restore.
            return Refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        ending = self._drive(lambda handlers: self._resume(execution_id, event_type, payload, handlers))
        if ending is None:
            return Refused("ResumeRefusedError", "gate-mismatch",
                           f"LlamaIndex reported UnhandledEvent: no waiter or step took {event_type!r}")
        return self.settle(execution_id, ending)

    # -- the peer's view ------------------------------------------------------------------
    def _context(self, execution_id: str) -> dict[str, JSON]:
        return json.loads(self.saved[execution_id])

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
        if flow_id is None or execution_id not in self.saved:
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
        self.saved.clear()
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


_live: "weakref.WeakSet[LlamaIndexSession]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    if threading.current_thread() is threading.main_thread():
        for session in list(_live):
            session.close()
