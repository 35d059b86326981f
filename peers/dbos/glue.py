"""DBOS Transact's glue, the adapter's side: a store (SQLite system database, witness, flow
programs), the worker process that runs the DBOS application (worker.py), relaunched as a
process supervisor would, and DBOS's own records read through DBOSClient. The driver (driver.py)
and every reproducer (template.py) run this same code; how each primitive maps: NOTES.md."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from loomcheck.peers.dbos.processes import Worker, WorkerDied, Zygote
from loomcheck.peers.dbos.records import MAX_LAUNCHES, error_of, park_of, step_rows
from loomcheck.peers.session import CRASHED, OK, Done, Refused, Session, folded_state
from loomcheck.peers.witness import Witness

JSON = Any


class DbosSession(Session):
    """The adapter's hold on DBOS: one mode, unguarded (DBOS's topics address answers themselves).
    `directory`: a store that outlives this process (the harness's, for `durable`), or None for a
    temporary one; `zygote`: the command that, given the store, runs worker.zygote_main."""

    def __init__(self, directory: str | None, kernel_types: frozenset[str], zygote: list[str]) -> None:
        # Without a store directory from the harness, a tmpfs one when there is one: a crash fault
        # kills a process, not the machine, so what DBOS and the witness wrote survives it anyway,
        # and every checkpoint's fsync would otherwise dominate the run.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self._tmpdir = None if directory else tempfile.mkdtemp(prefix="loomcheck-dbos-", dir=shm)
        self.store = Path(directory or self._tmpdir)  # type: ignore[arg-type]
        self.store.mkdir(parents=True, exist_ok=True)
        super().__init__(Witness(self.store / "witness.sqlite"), None, kernel_types)  # read here, written by the worker
        self.zygote_command = zygote
        self.worker: Worker | None = None
        self.zygote: Zygote | None = None  # forks workers with everything imported
        self.fresh = False          # the next worker empties the store first (a reset with no worker)
        self._client: Any = None
        atexit.register(self.close)
        flows = self.store / "flows.json"
        if flows.exists():  # a new process on a durable store: the programs deployed before
            self.programs = json.loads(flows.read_text())

    # -- the worker -----------------------------------------------------------------
    def _ensure(self) -> list[str]:
        """A live worker; launching one runs DBOS's recovery. The ids it re-drove."""
        if self.worker is not None and self.worker.alive():
            return []
        if self.worker is not None:
            self.worker.stop()
        if self.zygote is None or self.zygote.process.poll() is not None:
            self.zygote = Zygote(self.store, self.zygote_command)
        worker = self.zygote.fork()
        self.worker, fresh, self.fresh = worker, self.fresh, False
        return worker.launch(fresh, self.kernel_types)

    def _call(self, op: str, **fields: JSON) -> JSON:
        self._ensure()
        assert self.worker is not None
        return self.worker.call(op, **fields)

    def client(self) -> Any:
        """DBOS's own client on the store's system database."""
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
    def define(self, flow_id: str, program: dict[str, JSON]) -> None:
        super().define(flow_id, program)
        self._write_flows()  # a relaunched worker (DBOS recovery) needs the programs first
        if self.worker is not None and self.worker.alive():
            self.worker.call("define", flow=flow_id, program=program)

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Done:
        if flow_id not in self.programs:  # no program, no DBOS workflow to start
            return Refused("FlowDefinitionError", "unknown-flow", f"no flow {flow_id!r}")
        return self._run("start", execution=execution_id, flow=flow_id, input=input)

    def resume(self, execution_id: str, event_type: str, payload: JSON) -> Done:
        return self._run("resume", execution=execution_id, type=event_type, payload=payload)

    def _run(self, op: str, **fields: JSON) -> Done:
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
            return CRASHED
        if not result["ok"]:
            return Refused(result["error"], result["reason"], result.get("message", ""))
        return OK

    def recover(self, execution_id: str) -> Done:
        if not self.witness.exists(execution_id) and self.status(execution_id) is None:
            return Refused("ResumeRefusedError", "unknown-execution", f"DBOS has no workflow {execution_id!r}")
        try:
            self._ensure()  # a relaunch: DBOS recovers every PENDING workflow; a live worker already has
        except WorkerDied:
            return CRASHED
        return OK

    def recover_abandoned(self) -> list[str]:
        before = {e: len(self.witness.log(e)) for e in self.witness.executions()}
        try:
            self._ensure()
        except WorkerDied:
            pass
        return [e for e in self.witness.executions()
                if any(ev["type"] == "EXECUTION_RECOVERED" for ev in self.witness.log(e)[before.get(e, 0):])]

    def reset(self) -> None:
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

    # -- DBOS's own records ---------------------------------------------------------------
    def status(self, execution_id: str) -> Any:
        found = self.client().list_workflows(workflow_ids=[execution_id])
        return found[0] if found else None

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        status = self.status(execution_id)
        sequence = self.sequence(execution_id)  # DBOS numbers nothing like a Loom log: the witness's
        if status is None:
            return folded_state(status="pending", flow_id=None, sequence=sequence)
        args = (status.input or {}).get("args") or ()
        flow_id = args[1] if len(args) > 1 else None
        steps = step_rows(self.client().list_workflow_steps(execution_id))
        answers = [s["output"] for s in steps if s["function_name"] == "DBOS.recv"]  # what each recv consumed
        suspended_on = None
        if status.status == "PENDING":
            park = park_of(steps, self.programs.get(flow_id) if isinstance(flow_id, str) else None)
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
