"""LangGraph's glue: the functional API on a SQLite checkpointer, one thread per execution. The
driver (driver.py) and every reproducer (template.py) run this same code; how each primitive
maps: NOTES.md."""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Callable

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.config import get_config
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from loomcheck.peers.session import Completed, Crashed, Done, Ending, Failed, Parked, Refused, Session, folded_state
from loomcheck.peers.walker import EmitRefused, WorkerCrash, run_program
from loomcheck.peers.witness import Witness

JSON = Any


@task(name="loomcheck_step")
def _step(step_id: str, body: Callable[[], JSON]) -> dict[str, JSON]:
    # The step id travels in the stored value so the checkpoint names the step it holds.
    return {"stepId": step_id, "output": body()}


class _LangGraphPeer:
    """The walker's view of LangGraph inside one run of the entrypoint."""

    def __init__(self, input: JSON) -> None:
        self._input = input

    def step(self, step_id: str, body: Callable[[], JSON]) -> JSON:
        return _step(step_id, body).result()["output"]

    def gate(self, index: int, condition: dict[str, JSON]) -> JSON:
        return interrupt(condition)  # ADR 0057: LangGraph matches resume values to interrupts by order

    def input(self) -> JSON:
        return self._input


class LangGraphSession(Session):
    """The adapter's hold on LangGraph: one entrypoint on a checkpointer in a temporary directory."""

    def __init__(self, guarded: bool, kernel_types: frozenset[str]) -> None:
        super().__init__(Witness(), guarded, kernel_types)
        self._dir = tempfile.mkdtemp(prefix="loomcheck-langgraph-")
        atexit.register(shutil.rmtree, self._dir, True)  # also when the caller never closes the session
        self._open()

    def _open(self) -> None:
        self._conn = sqlite3.connect(str(Path(self._dir) / "checkpoints.db"), check_same_thread=False)
        self.saver = SqliteSaver(self._conn)
        self._last: dict[str, Ending] = {}  # how LangGraph's latest run of each thread ended, as invoke returned it
        session = self

        @entrypoint(checkpointer=self.saver)
        def loomcheck_flow(input: JSON) -> JSON:
            execution = get_config()["configurable"]["thread_id"]
            program = session.programs[session.witness.flow_of(execution) or ""]
            return run_program(program, execution, session.witness, _LangGraphPeer(input["input"]),
                               session.kernel_types)

        self.graph = loomcheck_flow

    # -- running ----------------------------------------------------------------------
    @staticmethod
    def config(execution_id: str) -> dict[str, JSON]:
        return {"configurable": {"thread_id": execution_id}}

    def _run(self, execution_id: str, command: JSON) -> Ending:
        ending = self._invoke(execution_id, command)
        self._last[execution_id] = ending
        return ending

    def _invoke(self, execution_id: str, command: JSON) -> Ending:
        """One run, and how it ended as LangGraph returned it."""
        try:
            returned = self.graph.invoke(command, self.config(execution_id))
        except WorkerCrash as crash:
            return Crashed(str(crash))
        except EmitRefused as refused:
            # The walker refused the emit inside the body; LangGraph fails the run with it.
            return Failed({"type": "EmitRefusedError", "reason": "kernel-type", "message": str(refused)})
        if isinstance(returned, dict) and "__interrupt__" in returned:
            value = returned["__interrupt__"][0].value
            return Parked(value if isinstance(value, dict) else {"on": value})
        return Completed(returned)

    def _parked(self, execution_id: str, snapshot: Any = None) -> dict[str, JSON] | None:
        """The condition of the interrupt the thread is parked on, or None.

        Whether it is parked comes from what LangGraph returned for the thread's latest run,
        because its stored state cannot tell: after a run that raised, `get_state()` lists the
        error beside the interrupt that run had already got past, and after a recovery that
        parks again it lists the old error beside the new interrupt. The condition itself is
        the stored one, `get_state()`'s pending interrupt, as any integration reads it (and as
        a restarted process would see it)."""
        ending = self._last.get(execution_id)
        if not isinstance(ending, Parked):
            return None
        snapshot = snapshot if snapshot is not None else self.graph.get_state(self.config(execution_id))
        stored = [i.value for t in snapshot.tasks for i in t.interrupts]
        value = stored[-1] if stored else ending.condition
        return value if isinstance(value, dict) else {"on": value}

    def _finished(self, execution_id: str) -> bool:
        return isinstance(self._last.get(execution_id), (Completed, Failed))

    # -- the operations ---------------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Done:
        refused = self.open_execution(execution_id, flow_id, input)  # a used thread id would continue that thread
        if refused is not None:
            return refused
        # LangGraph reads an input of None as "continue the thread", so every input travels
        # wrapped: {"input": value} (a limit of the mapping, not of LangGraph's semantics).
        return self.settle(execution_id, self._run(execution_id, {"input": input}))

    def resume(self, execution_id: str, event_type: str, payload: JSON) -> Done:
        if not self.witness.exists(execution_id):
            # LangGraph would start a new thread with this answer as its first gate's value.
            return Refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        snapshot = self.graph.get_state(self.config(execution_id))  # read once: the guard and the address
        refused = self.guard(event_type, self._parked(execution_id, snapshot), self._finished(execution_id))
        if refused is not None:
            return refused
        addressed = [i for t in snapshot.tasks for i in t.interrupts
                     if isinstance(i.value, dict) and i.value.get("on") == event_type]
        command = Command(resume={addressed[0].id: payload}) if addressed else Command(resume=payload)
        # LangGraph accepts every resume (it has no refusal); the answer is recorded as accepted
        # before the run so that the run's own events follow it, as in a Loom log.
        self.record_answer(execution_id, event_type, payload)
        return self.settle(execution_id, self._run(execution_id, command))

    def recover(self, execution_id: str) -> Done:
        if not self.witness.exists(execution_id):
            return Refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        refused = self.guard(None, self._parked(execution_id), self._finished(execution_id))
        if refused is not None:
            return refused
        self.witness.append(execution_id, "EXECUTION_RECOVERED", {})
        return self.settle(execution_id, self._run(execution_id, None))

    def recover_abandoned(self) -> list[str]:
        """Threads whose latest run raised (the worker died), re-driven; parked and finished ones skipped."""
        crashed = [e for e in self.witness.executions() if isinstance(self._last.get(e), Crashed)]
        for execution_id in crashed:
            self.recover(execution_id)
        return crashed

    # -- LangGraph's own records ----------------------------------------------------------
    def read_state(self, execution_id: str) -> dict[str, JSON]:
        flow_id = self.witness.flow_of(execution_id)
        if flow_id is None:
            return folded_state(status="pending", flow_id=None, sequence=0)
        writes = self.input_writes(execution_id)
        steps = {w["stepId"]: {"status": "completed", "attempt": 1, "output": w["output"]}
                 for channel, w in writes if channel == "__return__" and isinstance(w, dict) and "stepId" in w}
        # LangGraph keeps no record of a task that started and did not finish (a crash mid-step).
        steps.update(self.unfinished_steps(execution_id, steps))
        answers = next((w for channel, w in reversed(writes) if channel == "__resume__" and isinstance(w, list)), [])
        ending = self._last.get(execution_id)
        status = {Parked: "suspended", Completed: "completed", Failed: "failed"}.get(type(ending), "running")
        return folded_state(status=status, flow_id=flow_id, sequence=self.sequence(execution_id),
                            input=self._input(execution_id), answers=answers,
                            suspended_on=self._parked(execution_id), steps=steps,
                            output=self.graph.get_state(self.config(execution_id)).values if status == "completed" else None,
                            error=ending.error if isinstance(ending, Failed) else None)

    def _input_checkpoint(self, execution_id: str) -> Any:
        """The thread's first checkpoint (source "input"): its input and the entrypoint's writes."""
        return next((saved for saved in self.saver.list(self.config(execution_id))
                     if saved.metadata.get("source") == "input"), None)

    def input_writes(self, execution_id: str) -> list[tuple[str, JSON]]:
        saved = self._input_checkpoint(execution_id)
        return [(channel, value) for _, channel, value in (saved.pending_writes or [])] if saved else []

    def _input(self, execution_id: str) -> JSON:
        saved = self._input_checkpoint(execution_id)
        wrapped = saved.checkpoint["channel_values"].get("__start__") if saved else None
        return wrapped.get("input") if isinstance(wrapped, dict) else None

    # -- lifecycle --------------------------------------------------------------------
    def reset(self) -> None:
        super().reset()
        self._conn.close()
        for leftover in Path(self._dir).iterdir():  # the same directory, emptied: a new checkpoint store
            leftover.unlink()
        self._open()

    def close(self) -> None:
        super().close()
        self._conn.close()
        shutil.rmtree(self._dir, ignore_errors=True)
