"""DBOS Transact (`dbos`, SQLite system database) behind the driver interface.

How each primitive maps
-----------------------
- A flow program runs as ONE DBOS workflow, `_flow(execution, flow_id, input)`
  (`@DBOS.workflow()`), started with `SetWorkflowID(execution)`: the execution id
  IS the DBOS workflow id. Its body is `walker.run_program`.
- A program step is `DBOS.run_step({"name": <step id>}, body)`: DBOS names the
  checkpoint after the program's step id (operation_outputs.function_name), runs
  the body once, and on every re-execution returns the checkpointed output
  without running it (DBOS's own replay, and its own name check).
- A gate is `DBOS.recv(topic=<gate name>, timeout_seconds=TEN_YEARS)`. DBOS's recv
  blocks; a park is a workflow blocked in recv. An answer is
  `DBOS.send(execution, payload, topic=<event type>)`.
- "Parked at gate i" is read from DBOS's own records, no marker of ours: the
  workflow is PENDING, its operation_outputs end with the `DBOS.sleep` row that
  recv checkpoints (its durable timeout, function id k+1) just before it blocks,
  with no `DBOS.recv` row at k yet (recv checkpoints its message only when it
  consumes one), and no unconsumed notification for that topic is waiting (else
  recv is about to consume it). i = the number of `DBOS.recv` rows before it; the
  condition is the program's i-th suspend op. (`_park_of`.)
- Timeouts. DBOS's recv returns None on timeout, indistinguishable from a `null`
  answer, and checkpoints that None for good. So recv gets a ten-year timeout and
  `start`/`resume` return once the workflow is blocked in recv (as above) or
  finished; nothing ever times out, and no answer is invented.
- Process model. DBOS is a process-global singleton whose recovery is a real
  relaunch, so the DBOS application runs in a WORKER SUBPROCESS the adapter owns
  (JSON lines on two FIFOs). Workers are forked by a "zygote" process that has
  imported DBOS once (`_zygote_main`): a relaunch costs a fork and DBOS.launch(),
  not a Python start and a 0.5 s import. The adapter process reads the peer's
  state through `DBOSClient` (DBOS's own client API on the same SQLite system
  database), so it can read a crashed execution without relaunching anything.
- Crash faults (feature `recover`): when the walker raises WorkerCrash inside a
  step body, the worker process dies there and then (`os._exit`), before DBOS can
  checkpoint anything: a real process death in DBOS's model. recover /
  recover_abandoned / any later operation relaunch the worker, and DBOS's own
  `DBOS.launch()` recovery (`get_pending_workflows` + `startup_recovery_thread`)
  re-drives every PENDING workflow. The adapter writes EXECUTION_RECOVERED {} in
  the witness when DBOS re-drives a workflow the witness last saw running; DBOS
  also re-runs every PARKED (PENDING in recv) workflow on each launch, which is
  invisible (its steps and answered recvs replay, it blocks again in the same
  recv), so no event is written for those and recover_abandoned does not list them.
- Real crashes (feature `durable`): under $LOOMCHECK_STORE_DIR the system
  database, the witness and the flow programs live in that directory; the zygote
  dies with the adapter process and each worker with the zygote (PR_SET_PDEATHSIG,
  and EOF on their pipes), and a new adapter process relaunches DBOS on the same
  database. Without a store directory the temporary store is on /dev/shm.
- The witness (witness.py) is written only in the worker (one writer, so the
  peer's events and the adapter's notes are ordered). An answer is noted when
  `DBOS.send` returned, under the witness lock, so the woken workflow's events
  come after it.
- reset(): the worker wakes every blocked recv (a DBOS.send on its topic), makes
  those runs abandon (they raise before the walker sees the value), waits until no
  workflow function is running, then empties the system database with DBOS's own
  `SystemDatabase.reset_system_database(url, truncate=True)` (DBOS.destroy() takes
  about a second; this takes milliseconds).

What DBOS does that differs from a gate model (reported, not hidden)
----------------------------------------------------------------------
- DBOS.send accepts any topic for an existing workflow: an answer for another gate
  (or a kernel event type) is accepted and waits in the mailbox until a recv on
  that topic takes it (an "early send"); an answer to a finished workflow is
  accepted and never consumed. Only a send to an unknown workflow id fails
  (DBOSNonExistentWorkflowError -> refused unknown-execution).
- Starting an existing workflow id is DBOS's idempotent start: accepted, nothing
  runs again (no duplicate-execution refusal).
- DBOS has no per-workflow "recover" call; recover(x) on a live worker does
  nothing and is accepted; every launch re-drives every PENDING workflow.
- The manifest (manifests/dbos.toml) lists each divergence with its ADR decision.

What does not map: code versions / resume-as (application_version and
fork_workflow are a different model: a fork is a NEW workflow id that replays the
original's checkpoints up to a step; see the manifest), timers (recv timeouts
invent a null answer), human steps, in-doubt steps, parallel, view digests,
security, legacy scans, retention, fold, load-log.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from loomcheck.peers.base import PeerDriver, folded_state
from loomcheck.peers.walker import EmitRefused, WorkerCrash, condition_of, run_program
from loomcheck.peers.witness import Witness
from loomcheck.contract.driver import Outcome
from loomcheck.spec.programs import FlowProgram, SuspendOp

JSON = Any

TEN_YEARS = 10 * 365 * 24 * 3600.0  # recv's timeout: a timeout would checkpoint a None answer
APP_VERSION = "loomcheck-dbos-1"   # fixed, so a relaunch recovers the workflows of the previous process
SETTLE_SECONDS = 30.0               # a run that neither parks nor ends within this is a finding
CRASH_EXIT = 70                     # the worker's exit status when a crash fault fires
MAX_LAUNCHES = 8                    # relaunches before an operation, while DBOS's recovery keeps crashing
TERMINAL_EVENTS = ("EXECUTION_COMPLETED", "EXECUTION_FAILED")
STOPPED_EVENTS = ("EXECUTION_SUSPENDED",) + TERMINAL_EVENTS


def gates_of(program: FlowProgram) -> list[SuspendOp]:
    """The program's suspend points in call order (no human steps or parallel: not mapped)."""
    return [op for op in program.body if isinstance(op, SuspendOp)]


def park_of(steps: list[dict[str, JSON]], program: FlowProgram | None,
            waiting: Callable[[str], bool] | None = None) -> tuple[int, dict[str, JSON]] | None:
    """(gate index, condition) when DBOS's checkpoints say the workflow is blocked in a recv.

    `steps` are DBOS's operation_outputs rows (list_workflow_steps), ordered by function id.
    recv checkpoints its timeout as `DBOS.sleep` at k+1 before it blocks, and itself at k only
    when it consumes a message; `waiting(topic)` says whether a message is already there."""
    if not steps or steps[-1]["function_name"] != "DBOS.sleep":
        return None
    recv_id = steps[-1]["function_id"] - 1
    if any(s["function_id"] == recv_id for s in steps):
        return None
    index = sum(1 for s in steps if s["function_name"] == "DBOS.recv")
    gates = gates_of(program) if program is not None else []
    if index >= len(gates):
        return None
    condition = condition_of(gates[index])
    if waiting is not None and waiting(gates[index].on):
        return None  # a message is there: recv is about to consume it
    return index, condition


def error_of(error: JSON) -> dict[str, JSON] | None:
    """A DBOS-recorded workflow error as the driver's {type, message}."""
    if error is None:
        return None
    if isinstance(error, EmitRefused):  # the flow-program language's refused emit (ADR 0104 D1)
        return {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(error)}
    return {"type": type(error).__name__, "message": str(error)}


def step_rows(steps: list[Any]) -> list[dict[str, JSON]]:
    return [{"function_id": s["function_id"], "function_name": s["function_name"], "output": s["output"],
             "error": s["error"]} for s in steps]


# =====================================================================================
# The worker: the DBOS application, in its own process
# =====================================================================================
class _Runtime:
    """One DBOS application (the worker process's only one)."""

    def __init__(self, store: Path, fresh: bool) -> None:
        from dbos import DBOS

        self.store = store
        self.url = f"sqlite:///{store / 'dbos.sqlite'}"
        self.witness = Witness(store / "witness.sqlite")
        self.flows: dict[str, FlowProgram] = {}
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
        raw = json.loads(path.read_text()) if path.exists() else {}
        self.flows = {k: FlowProgram.model_validate(v) for k, v in raw.items()}

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

    def program_of(self, status: Any) -> FlowProgram | None:
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
        self.flows[flow_id] = FlowProgram.model_validate(program)

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
        return run_program(program, execution, runtime.witness, _DbosPeer(runtime, execution, input))
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


def _zygote_main() -> None:
    """`python -c 'from loomcheck.peers.dbos import _zygote_main; _zygote_main()' STORE`: imports
    DBOS and everything once, single-threaded, then forks one worker per request
    `{"fifo_in", "fifo_out"}` (answering `{"pid"}`): a relaunch after a crash costs a fork, not a
    Python start and a 0.5 s import. Workers never run in the zygote itself."""
    store = Path(sys.argv[1])
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
                _die_with_parent()  # the zygote dies with the adapter, the worker with the zygote
                _worker(store, request["fifo_in"], request["fifo_out"])
            finally:
                os._exit(0)
        proto.write(json.dumps({"pid": pid}) + "\n")
    os._exit(0)


def _worker(store: Path, fifo_in: str, fifo_out: str) -> None:
    """A forked worker: waits for `{"op": "launch", "fresh": bool}`, launches DBOS on STORE (its
    recovery included) and serves requests on its two FIFOs."""
    stdin = open(fifo_in, "r")
    proto = open(fifo_out, "w", buffering=1)
    sys.stdin.close()
    first = stdin.readline()
    if not first:
        os._exit(0)
    try:
        runtime = _Runtime(store, bool(json.loads(first).get("fresh")))
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


# =====================================================================================
# The adapter: the driver the harness talks to
# =====================================================================================
class WorkerDied(Exception):
    """The worker process exited (a crash fault fired in it)."""


class _Zygote:
    """The process that forks workers (see `_zygote_main`)."""

    def __init__(self, store: Path) -> None:
        code = "from loomcheck.peers.dbos import _zygote_main; _zygote_main()"
        self.store = store
        self.log = open(store / "worker.log", "ab")
        self.process = subprocess.Popen([sys.executable, "-c", code, str(store)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                        preexec_fn=_die_with_parent, text=True, bufsize=1)
        self.count = 0

    def fork(self) -> "_Worker":
        assert self.process.stdin is not None and self.process.stdout is not None
        self.count += 1
        base = self.store / f"worker-{os.getpid()}-{self.count}"
        fifo_in, fifo_out = f"{base}.in", f"{base}.out"
        for fifo in (fifo_in, fifo_out):
            if os.path.exists(fifo):
                os.unlink(fifo)
            os.mkfifo(fifo)
        try:
            self.process.stdin.write(json.dumps({"fifo_in": fifo_in, "fifo_out": fifo_out}) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"the DBOS zygote died (exit status {self.process.wait()}); see {self.log.name}")
            pid = json.loads(line)["pid"]
            # The same order as the worker opens them, so neither blocks for ever.
            to_worker = open(fifo_in, "w", buffering=1)
            from_worker = open(fifo_out, "r")
        finally:
            for fifo in (fifo_in, fifo_out):
                if os.path.exists(fifo):
                    os.unlink(fifo)
        return _Worker(pid, to_worker, from_worker)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.log.close()


class _Worker:
    """One forked worker process: launched once, then serves requests until it dies."""

    def __init__(self, pid: int, to_worker: Any, from_worker: Any) -> None:
        self.pid, self.to_worker, self.from_worker = pid, to_worker, from_worker
        self.dead = False
        self.ready: list[str] = []

    def launch(self, fresh: bool) -> list[str]:
        """DBOS.launch() in the worker; its recovery is part of it. The ids it re-drove."""
        self.ready = self.call("launch", fresh=fresh)
        return self.ready

    def call(self, op: str, **fields: JSON) -> JSON:
        try:
            self.to_worker.write(json.dumps({"op": op, **fields}) + "\n")
            self.to_worker.flush()
        except (BrokenPipeError, OSError) as exc:
            self.dead = True
            raise WorkerDied(str(exc)) from None
        line = self.from_worker.readline()
        if not line:
            self.dead = True
            raise WorkerDied("the worker process exited")
        reply = json.loads(line)
        if not reply["ok"]:
            raise RuntimeError(f"the DBOS worker failed:\n{reply['trace']}")
        return reply["result"]

    def alive(self) -> bool:
        if self.dead:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            self.dead = True
        return not self.dead

    def stop(self) -> None:
        if not self.dead:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.dead = True
        for stream in (self.to_worker, self.from_worker):
            try:
                stream.close()
            except OSError:
                pass


def _die_with_parent() -> None:
    """The worker must not outlive the adapter (the harness SIGKILLs the adapter: `durable`)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class DbosDriver(PeerDriver):
    peer = "dbos"
    distribution = "dbos"
    features = ["recover", "durable"]

    def __init__(self, directory: str | None = None) -> None:
        # Without a store directory from the harness, a tmpfs one when there is one: a crash fault
        # kills a process, not the machine, so what DBOS and the witness wrote survives it anyway,
        # and every checkpoint's fsync would otherwise dominate the run.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self._tmpdir = None if directory else tempfile.mkdtemp(prefix="loomcheck-dbos-", dir=shm)
        self.store = Path(directory or self._tmpdir)  # type: ignore[arg-type]
        self.store.mkdir(parents=True, exist_ok=True)
        super().__init__(Witness(self.store / "witness.sqlite"))  # read here, written by the worker
        self.worker: _Worker | None = None
        self.zygote: _Zygote | None = None  # forks workers with everything imported
        self.fresh = False          # the next worker empties the store first (a reset with no worker)
        self._client: Any = None
        atexit.register(self.close)
        flows = self.store / "flows.json"
        self.programs: dict[str, JSON] = {}  # as defined, for the worker
        if flows.exists():  # a new process on a durable store: the programs deployed before
            self.programs = json.loads(flows.read_text())
            self.flows = {k: FlowProgram.model_validate(v) for k, v in self.programs.items()}

    def translation(self) -> Any:
        from loomcheck.peers.scripts.dbos import DbosScript

        return DbosScript()

    # -- the worker -----------------------------------------------------------------
    def _ensure(self) -> list[str]:
        """A live worker; launching one runs DBOS's recovery. The ids it re-drove."""
        if self.worker is not None and self.worker.alive():
            return []
        if self.worker is not None:
            self.worker.stop()
        if self.zygote is None or self.zygote.process.poll() is not None:
            self.zygote = _Zygote(self.store)
        worker = self.zygote.fork()
        self.worker, fresh, self.fresh = worker, self.fresh, False
        return worker.launch(fresh)

    def _call(self, op: str, **fields: JSON) -> JSON:
        self._ensure()
        assert self.worker is not None
        return self.worker.call(op, **fields)

    def _client_(self) -> Any:
        if self._client is None:
            from dbos import DBOSClient

            if not (self.store / "dbos.sqlite").exists():
                self._ensure()  # DBOS creates the system database when it first launches on it
            # else: never relaunch to read (a relaunch is DBOS's recovery, not a read)
            self._client = DBOSClient(system_database_url=f"sqlite:///{self.store / 'dbos.sqlite'}")
        return self._client

    def _write_flows(self) -> None:
        (self.store / "flows.json").write_text(json.dumps(self.programs))

    # -- operations -------------------------------------------------------------------
    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        outcome = super().define_flow(flow_id, program)
        if outcome.ok:
            self.programs[flow_id] = program
            self._write_flows()  # a relaunched worker (DBOS recovery) needs the programs first
            if self.worker is not None and self.worker.alive():
                self.worker.call("define", flow=flow_id, program=program)
        return outcome

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        if flow_id not in self.flows:  # no program, no DBOS workflow to start
            return Outcome.refused("FlowDefinitionError", "unknown-flow", f"no flow {flow_id!r}")
        return self._run("start", execution=execution_id, flow=flow_id, input=input)

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        return self._run("resume", execution=execution_id, type=event_type, payload=payload)

    def _run(self, op: str, **fields: JSON) -> Outcome:
        # A dead worker is relaunched first, as a process supervisor would, and every launch is
        # DBOS's recovery of whatever was PENDING; a crash fault may kill that launch again, so
        # it is relaunched until it stays up (each launch is one more recovery attempt).
        for launch in range(MAX_LAUNCHES):
            try:
                self._ensure()
                break
            except WorkerDied as exc:
                if launch == MAX_LAUNCHES - 1:
                    raise RuntimeError(f"DBOS's launch recovery crashed the worker {MAX_LAUNCHES} times in a row "
                                       f"({exc})") from None
        try:
            result = self._call(op, **fields)
        except WorkerDied:
            return Outcome.accepted(crashed=True)
        if not result["ok"]:
            return Outcome.refused(result["error"], result["reason"], result.get("message", ""))
        return Outcome.accepted()

    def recover(self, execution_id: str) -> Outcome:
        if not self.witness.exists(execution_id) and self._status(execution_id) is None:
            return Outcome.refused("ResumeRefusedError", "unknown-execution", f"DBOS has no workflow {execution_id!r}")
        try:
            self._ensure()  # a relaunch: DBOS recovers every PENDING workflow; a live worker already has
        except WorkerDied:
            return Outcome.accepted(crashed=True)
        return Outcome.accepted()

    def recover_abandoned(self) -> list[str]:
        before = {e: len(self.witness.log(e)) for e in self.witness.executions()}
        try:
            self._ensure()
        except WorkerDied:
            pass
        return [e for e in self.witness.executions()
                if any(ev["type"] == "EXECUTION_RECOVERED" for ev in self.witness.log(e)[before.get(e, 0):])]

    def reset(self) -> None:
        self.flows.clear()
        self.programs.clear()
        self._write_flows()
        if self.worker is not None and self.worker.alive():
            try:
                self.worker.call("reset")
                return
            except WorkerDied:
                pass
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.fresh = True  # the next worker empties the store before DBOS launches (no recovery)
        self._ensure()

    # -- the peer's own view ----------------------------------------------------------
    def _status(self, execution_id: str) -> Any:
        found = self._client_().list_workflows(workflow_ids=[execution_id])
        return found[0] if found else None

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        status = self._status(execution_id)
        sequence = self.sequence(execution_id)  # DBOS numbers nothing like a Loom log: the witness's
        if status is None:
            return folded_state(status="pending", flow_id=None, sequence=sequence)
        args = (status.input or {}).get("args") or ()
        flow_id = args[1] if len(args) > 1 else None
        steps = step_rows(self._client_().list_workflow_steps(execution_id))
        answers = [s["output"] for s in steps if s["function_name"] == "DBOS.recv"]  # what each recv consumed
        suspended_on = None
        if status.status == "PENDING":
            park = park_of(steps, self.flows.get(flow_id) if isinstance(flow_id, str) else None)
            state, suspended_on = ("suspended", park[1]) if park is not None else ("running", None)
        else:
            state = {"SUCCESS": "completed", "ERROR": "failed", "CANCELLED": "cancelled",
                     "ENQUEUED": "pending", "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "failed"}.get(status.status, "running")
        # DBOS checkpoints a step once, when it completes; how many times its body ran is not
        # in its records (a crash leaves no row), so `attempt` is the witness's STEP_STARTED count.
        own = {s["function_name"]: s for s in steps if not s["function_name"].startswith("DBOS.")}
        step_state = {name: {"status": "failed" if s["error"] is not None else "completed",
                             "attempt": self.witness.started(execution_id, name) or 1, "output": s["output"]}
                      for name, s in own.items()}
        # A step whose body ran but never returned (its process died) has no checkpoint: DBOS
        # records a step only when it completes. Its "started" status is the witness's.
        step_state.update(self.unfinished_steps(execution_id, own))
        return folded_state(status=state, flow_id=flow_id, sequence=sequence,
                            input=args[2] if len(args) > 2 else None, answers=answers, suspended_on=suspended_on,
                            steps=step_state, output=status.output if state == "completed" else None,
                            error=error_of(status.error) if state == "failed" else None)

    def close(self) -> None:
        for process in (self.worker, self.zygote):
            if process is not None:
                process.stop()
        self.worker, self.zygote = None, None
        if self._client is not None:
            self._client.destroy()
            self._client = None
        try:
            super().close()
        except Exception:
            pass
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None


def make() -> DbosDriver:
    """The driver; durable under $LOOMCHECK_STORE_DIR when the harness sets it."""
    return DbosDriver(os.environ.get("LOOMCHECK_STORE_DIR") or None)
