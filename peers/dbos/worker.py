"""The DBOS application, in the worker process the adapter owns: the one DBOS workflow that walks
every flow program, DBOS's step and recv primitives for the walker, and the worker's serving
loop, forked from a zygote that imported DBOS once. Part of the DBOS glue (NOTES.md), rendered
into every DBOS reproducer."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from loomcheck.peers.dbos.processes import die_with_parent
from loomcheck.peers.dbos.records import (APP_VERSION, CRASH_EXIT, SETTLE_SECONDS, STOPPED_EVENTS, TEN_YEARS, error_of,
                                          park_of, step_rows)
from loomcheck.peers.walker import WorkerCrash, run_program
from loomcheck.peers.witness import Witness

JSON = Any


class _Runtime:
    """One DBOS application (the worker process's only one)."""

    def __init__(self, store: Path, fresh: bool, kernel_types: frozenset[str]) -> None:
        from dbos import DBOS

        self.store = store
        self.kernel_types = kernel_types
        self.url = f"sqlite:///{store / 'dbos.sqlite'}"
        self.witness = Witness(store / "witness.sqlite")
        self.flows: dict[str, dict[str, JSON]] = {}  # flow id -> its program, as JSON
        self.generation = 0          # bumped by reset: runs of an older generation abandon
        self.active = 0              # workflow functions running in this process
        self.active_lock = threading.Condition()
        self.started_here: set[str] = set()   # started by an operation of this process
        self.entered: set[str] = set()        # every workflow whose function ran in this process
        self.redriven: set[str] = set()       # re-driven by DBOS's recovery from a running state
        if fresh:  # a reset with no live worker: empty the store before DBOS recovers anything
            from dbos._sys_db import SystemDatabase

            if (store / "dbos.sqlite").exists():
                SystemDatabase.reset_system_database(self.url, truncate=True)
            self.witness.reset()
            (store / "flows.json").write_text("{}")
        self.load_flows()
        _RUNTIME[0] = self
        DBOS(config={"name": "loomcheck", "system_database_url": self.url, "log_level": "WARNING",
                     "application_version": APP_VERSION,
                     # SQLite has no LISTEN/NOTIFY: recv is woken by this poller (default 1 s)
                     "notification_listener_polling_interval_sec": 0.002})
        DBOS.launch()  # DBOS's own recovery of every PENDING workflow starts here

    def load_flows(self) -> None:
        path = self.store / "flows.json"
        self.flows = json.loads(path.read_text()) if path.exists() else {}

    # -- reading the peer -----------------------------------------------------------
    def status(self, execution: str) -> Any:
        from dbos import DBOS

        return DBOS.get_workflow_status(execution)

    def steps(self, execution: str) -> list[dict[str, JSON]]:
        from dbos import DBOS

        return step_rows(DBOS.list_workflow_steps(execution))

    def waiting(self, execution: str, topic: str) -> bool:
        """Whether DBOS's mailbox holds an unconsumed message for this workflow and topic."""
        import sqlalchemy as sa

        sys_db = _dbos_instance()._sys_db
        n = sys_db.tables.notifications
        with sys_db.engine.connect() as c:
            row = c.execute(sa.select(sa.func.count()).select_from(n).where(
                n.c.destination_uuid == execution, n.c.topic == topic, n.c.consumed == False)).scalar()  # noqa: E712
        return bool(row)

    def program_of(self, status: Any) -> dict[str, JSON] | None:
        args = (status.input or {}).get("args") or ()
        return self.flows.get(args[1]) if len(args) > 1 else None

    def ending(self, execution: str) -> dict[str, JSON]:
        """Wait until DBOS's records say the workflow is blocked in a recv or finished."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            status = self.status(execution)
            if status is None:
                raise RuntimeError(f"DBOS has no workflow {execution!r}")
            if status.status == "SUCCESS":
                return {"kind": "completed", "output": status.output}
            if status.status in ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
                return {"kind": "failed", "error": error_of(status.error)}
            if status.status == "CANCELLED":
                return {"kind": "failed", "error": {"type": "Cancelled", "message": "DBOS cancelled the workflow"}}
            if status.status == "PENDING":
                steps = self.steps(execution)
                park = park_of(steps, self.program_of(status), lambda topic: self.waiting(execution, topic))
                if park is not None and self.steps(execution) == steps:  # unchanged across the mailbox check
                    return {"kind": "parked", "condition": park[1]}
            time.sleep(0.002)
        raise RuntimeError(f"DBOS's workflow {execution!r} neither parked in recv nor finished within "
                           f"{SETTLE_SECONDS:.0f} s")

    def settle(self, execution: str, finished_before: bool = False) -> None:
        """Note how the run stands now, unless the witness already says exactly that."""
        end = self.ending(execution)
        last = self.witness.log(execution)[-1:] or [{}]
        if finished_before:
            return  # it had finished before this operation: nothing ran
        if end["kind"] == "parked":
            if last[0].get("type") == "EXECUTION_SUSPENDED" and last[0]["payload"] == {"condition": end["condition"]}:
                return  # still blocked in the same recv: the run did not move
            self.witness.append(execution, "EXECUTION_SUSPENDED", {"condition": end["condition"]})
        elif end["kind"] == "completed":
            self.witness.append(execution, "EXECUTION_COMPLETED", {"output": end["output"]})
        else:
            self.witness.append(execution, "EXECUTION_FAILED", {"error": end["error"]})

    # -- operations ---------------------------------------------------------------------
    def define(self, flow_id: str, program: dict[str, JSON]) -> None:
        self.flows[flow_id] = program

    def start(self, execution: str, flow_id: str, input: JSON) -> dict[str, JSON]:
        from dbos import DBOS, SetWorkflowID

        existed = self.status(execution) is not None
        with self.witness._lock:  # the run's own events come after EXECUTION_STARTED
            self.started_here.add(execution)
            with SetWorkflowID(execution):
                DBOS.start_workflow(_flow, execution, flow_id, input)
            if existed:  # DBOS's idempotent start: the existing workflow, nothing new runs
                return {"ok": True}
            self.witness.begin(execution, flow_id)
            self.witness.append(execution, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
        self.settle(execution)
        return {"ok": True}

    def resume(self, execution: str, event_type: str, payload: JSON) -> dict[str, JSON]:
        from dbos import DBOS
        from dbos._error import DBOSNonExistentWorkflowError

        before = self.status(execution)  # DBOS's own view: had the workflow finished already?
        finished_before = before is not None and before.status in ("SUCCESS", "ERROR", "CANCELLED",
                                                                   "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
        with self.witness._lock:  # the answer is noted before the woken run writes anything
            try:
                DBOS.send(execution, payload, topic=event_type)
            except DBOSNonExistentWorkflowError as exc:
                return {"ok": False, "error": "ResumeRefusedError", "reason": "unknown-execution", "message": str(exc)}
            self.witness.append(execution, event_type, payload)
            self.witness.append(execution, "EXECUTION_RESUMED", payload)
        self.settle(execution, finished_before)
        return {"ok": True}

    def recovered(self) -> list[str]:
        """After launch: wait until DBOS's recovery has entered every PENDING workflow, then
        settle the ones it re-drove from a running state (they have EXECUTION_RECOVERED)."""
        from dbos import DBOS

        # DBOS's recovery re-enqueues each PENDING workflow on its internal queue (ENQUEUED),
        # and the queue thread dequeues and runs it (PENDING again): wait for every one.
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            waiting = {s.workflow_id for s in DBOS.list_workflows(status=["PENDING", "ENQUEUED"], load_input=False,
                                                                   load_output=False)}
            if waiting <= self.entered:
                break
            time.sleep(0.005)
        redriven = sorted(self.redriven)
        for execution in redriven:
            self.settle(execution)
        return redriven

    def reset(self) -> None:
        from dbos._sys_db import SystemDatabase

        self.generation += 1
        deadline = time.monotonic() + SETTLE_SECONDS
        with self.active_lock:
            while self.active and time.monotonic() < deadline:
                self._wake_blocked()
                self.active_lock.wait(0.01)
            if self.active:
                raise RuntimeError(f"{self.active} DBOS workflows did not stop for the reset")
        SystemDatabase.reset_system_database(self.url, truncate=True)
        self.witness.reset()
        self.flows.clear()
        self.started_here.clear()
        self.entered.clear()
        self.redriven.clear()

    def _wake_blocked(self) -> None:
        """Send each workflow blocked in recv a message on its topic: it wakes and abandons."""
        from dbos import DBOS

        for status in DBOS.list_workflows(status="PENDING", load_output=False):
            park = park_of(self.steps(status.workflow_id), self.program_of(status))
            if park is not None:
                DBOS.send(status.workflow_id, None, topic=park[1]["on"])


_RUNTIME: list[Any] = [None]  # the worker's _Runtime, for the workflow function


class _Abandoned(Exception):
    """A run of a generation a reset discarded: it stops at its next gate."""


def _dbos_instance() -> Any:
    from dbos._dbos import _get_dbos_instance

    return _get_dbos_instance()


class _DbosPeer:
    """The walker's Peer: DBOS's step and recv primitives."""

    def __init__(self, runtime: _Runtime, execution: str, input: JSON) -> None:
        self.runtime, self.execution, self._input = runtime, execution, input
        self.generation = runtime.generation

    def step(self, step_id: str, body: Callable[[], JSON]) -> JSON:
        from dbos import DBOS

        def checkpointed() -> JSON:
            try:
                return body()
            except WorkerCrash:
                _die()  # the worker dies inside the step, before DBOS checkpoints it
                raise

        return DBOS.run_step({"name": step_id}, checkpointed)

    def gate(self, index: int, condition: dict[str, JSON]) -> JSON:
        from dbos import DBOS

        value = DBOS.recv(topic=condition["on"], timeout_seconds=TEN_YEARS)
        if self.runtime.generation != self.generation:
            raise _Abandoned(f"{self.execution} was reset")
        return value

    def input(self) -> JSON:
        return self._input


def _die() -> None:
    sys.stderr.flush()
    os._exit(CRASH_EXIT)


def _flow(execution: str, flow_id: str, input: JSON) -> JSON:
    """The one DBOS workflow: a run of the flow program, from the top."""
    runtime = _RUNTIME[0]
    with runtime.active_lock:
        runtime.active += 1
    try:
        if execution not in runtime.started_here:  # DBOS's launch recovery is re-driving it
            last = runtime.witness.last_type(execution)
            if last not in STOPPED_EVENTS:  # it was running when its process died
                runtime.witness.append(execution, "EXECUTION_RECOVERED", {})
                runtime.redriven.add(execution)
        runtime.entered.add(execution)  # after the above: recovered() reads redriven once all entered
        program = runtime.flows[flow_id]
        return run_program(program, execution, runtime.witness, _DbosPeer(runtime, execution, input),
                           runtime.kernel_types)
    finally:
        with runtime.active_lock:
            runtime.active -= 1
            runtime.active_lock.notify_all()


def _register() -> None:
    from dbos import DBOS

    global _flow
    _flow = DBOS.workflow(name="loomcheck.flow")(_flow)


def _fast_recovery_queue() -> None:
    """DBOS's launch recovery re-enqueues pending workflows on its internal queue, whose worker
    polls every second by default and exposes no setting for it; the queue is created here first
    with a short interval, so a relaunch re-drives in milliseconds. Only the polling changes."""
    from dbos._dbos import _get_or_create_dbos_registry
    from dbos._utils import INTERNAL_QUEUE_NAME

    _get_or_create_dbos_registry()._register_internal_queue(INTERNAL_QUEUE_NAME, polling_interval_sec=0.005)


def zygote_main(store: str) -> None:
    """The zygote process (the session's zygote command, with STORE): imports DBOS and everything
    once, single-threaded, then forks one worker per request `{"fifo_in", "fifo_out"}` (answering
    `{"pid"}`): a relaunch after a crash costs a fork, not a Python start and a 0.5 s import.
    Workers never run in the zygote itself."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints go to the log, never into the protocol
    _register()
    _fast_recovery_queue()
    import dbos._sys_db  # noqa: F401  (imported before any fork)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped by the kernel
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                proto.close()
                die_with_parent()  # the zygote dies with the adapter, the worker with the zygote
                _worker(Path(store), request["fifo_in"], request["fifo_out"])
            finally:
                os._exit(0)
        proto.write(json.dumps({"pid": pid}) + "\n")
    os._exit(0)


def _worker(store: Path, fifo_in: str, fifo_out: str) -> None:
    """A forked worker: waits for `{"op": "launch", "fresh": bool, "kernelTypes": [...]}`, launches
    DBOS on STORE (its recovery included) and serves requests on its two FIFOs."""
    stdin = open(fifo_in, "r")
    proto = open(fifo_out, "w", buffering=1)
    sys.stdin.close()
    first = stdin.readline()
    if not first:
        os._exit(0)
    try:
        launch = json.loads(first)
        runtime = _Runtime(store, bool(launch.get("fresh")), frozenset(launch["kernelTypes"]))
        redriven = runtime.recovered()
        proto.write(json.dumps({"ok": True, "result": redriven}) + "\n")
    except Exception:
        proto.write(json.dumps({"ok": False, "trace": traceback.format_exc()}) + "\n")
        os._exit(1)
    for line in stdin:
        request = json.loads(line)
        try:
            result = _serve(runtime, request)
            reply = {"ok": True, "result": result}
        except Exception:
            reply = {"ok": False, "trace": traceback.format_exc()}
        proto.write(json.dumps(reply) + "\n")
    os._exit(0)  # EOF: the adapter is gone; blocked workflow threads must not keep us alive


def _serve(runtime: _Runtime, request: dict[str, JSON]) -> JSON:
    op = request["op"]
    if op == "define":
        return runtime.define(request["flow"], request["program"])
    if op == "start":
        return runtime.start(request["execution"], request["flow"], request["input"])
    if op == "resume":
        return runtime.resume(request["execution"], request["type"], request["payload"])
    if op == "reset":
        return runtime.reset()
    if op == "ping":
        return None
    raise ValueError(f"unknown op {op!r}")
