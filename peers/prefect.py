"""Prefect through the driver interface: `@flow` / `@task` on a local Prefect server.

    pip install 'loomcheck[prefect]'
    loomcheck run --impl prefect --profile peers-slow    # slow: about 0.6 s per start or resume; not in CI

The adapter starts its own Prefect API server (uvicorn, `prefect.server.api.server:create_app`,
the app `prefect server start` serves) on 127.0.0.1 and a free port, with a SQLite database,
result storage and PREFECT_HOME in a temporary directory; analytics, telemetry, the UI, logging to
the API, the version check and the server's background services (scheduler, late runs, pause
expirations, ...) are off, so nothing leaves the machine. The server runs in its own process
group and is stopped in `close()` and at interpreter exit. The Prefect client in this process is
pointed at it through the environment, set before Prefect is imported (and the settings context
refreshed, for a process that imported Prefect first).

How each primitive maps (Prefect's own, nothing re-implemented):

    a flow execution     one flow run of the deployment `loomcheck-flow/loomcheck`; the parameters
                         carry {execution, flowId, input}. Prefect only suspends a flow run that has a
                         deployment (`HandlePausingFlows`: "Cannot suspend flows without a deployment"),
                         so there is one, with no work pool: the adapter is its worker, and runs the
                         scheduled flow run in process with `prefect.flow_engine.run_flow(flow, flow_run)`
    the flow body        walker.run_program inside the `@flow`; Prefect re-runs it from the top
                         every time the flow run is run again (after a resume)
    step                 a `@task(persist_result=True, cache_key_fn=<flow run id, step id>)` call:
                         Prefect's result store holds the step's value under that key, and a re-run
                         of the flow gets a Completed(Cached) task instead of running the body
    suspend (a gate)     `suspend_flow_run(wait_for_input=<RunInput {value: Any}>)` with Prefect's
                         default key, its count of pauses in this run ("1", "2", ...): the i-th call
                         proposes Suspended(pause_key=i); the server rejects a key it has already seen
                         on this flow run, and the call then returns the input stored for that key
                         (ADR 0057: the i-th suspend point gets the i-th answer, by Prefect's counter).
                         The gate's condition is the RunInput's description, which Prefect stores
                         beside the input's schema (`suspended-<i>-description`)
    park                 the flow run ends in the PAUSED state named "Suspended"; the condition is read
                         back from Prefect's flow run input under the state's `run_input_keyset`
    two modes            guarded (`make`, the default): before an answer or a retry the adapter does what
                         an integration writes for itself (PeerDriver.guard), from Prefect's own report
                         (the flow run's state, the pending pause's stored condition); raw (`make_raw`):
                         every call goes straight to Prefect
    resume gate X with P `resume_flow_run(flow_run_id, run_input={"value": P})`. Prefect's resume names
                         no gate and takes no event type: it answers whatever pause the run is in, so X
                         is not passed (a wrong gate or a kernel type is accepted: the suite reports
                         it). Prefect refuses a run that is not paused (NotPausedError -> not-suspended)
                         and validates the input against the stored schema (a rejection -> invalid-payload,
                         which cannot happen for {value: Any}). An accepted resume leaves the run
                         Scheduled ("Resuming"); the adapter then runs it in process
    crash fault          the worker dies: the walker's WorkerCrash leaves the task's body as a
                         BaseException, which Prefect's engines classify as a crash of the process
                         running the flow (as a KeyboardInterrupt or a termination signal): the task
                         run and the flow run end CRASHED (a plain exception would end them FAILED)
    recover              Prefect's retry of a flow run, what the UI's "Retry" sends: propose
                         Scheduled("AwaitingRetry"), not forced; the orchestration policy decides
                         (it rejects a COMPLETED run -> terminal; it accepts a crashed, a failed and
                         a paused one), and the adapter, as the deployment's worker, runs it.
                         recover_abandoned retries the runs Prefect reports CRASHED
    state                Prefect's own records: the flow run's state (status), its parameters (flowId,
                         input), its flow run inputs `suspended-<i>-response` (the answers, by key),
                         the description of the pending keyset (suspendedOn), the result store entries
                         of the program's steps (steps), the persisted result of a Completed run (output)

Flow run heartbeats are off for the adapter's runs (they feed Prefect's zombie detection, an
automation that is off here, and cost up to a second per run); a real SIGKILL of the worker would
leave the flow run RUNNING until that automation marks it CRASHED, so `durable` is not declared.

What does not map (not-applicable in adapters/manifests/prefect.toml): typed answers (Prefect
validates run_input against a pydantic model's schema, but a program's JSON Schema would have to be
turned into a pydantic model by the adapter), human steps, in-doubt effects, parallel branches, emits
of kernel events as a peer rule, approvals, timers (Prefect's suspend timeout is wall-clock seconds
and fails the run), resumeAs and state migration, legacy logs, retention, durability across SIGKILL.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable
from uuid import UUID

JSON = Any


# -- the environment, before Prefect is imported ---------------------------------------------
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Home:
    """The temp dir and loopback port of this process's Prefect (one per process: Prefect's
    settings are process-wide)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="loomcheck-prefect-"))
        self.port = _free_port()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def environment(self) -> dict[str, str]:
        off = "false"
        return {
            "PREFECT_HOME": str(self.dir / "home"),
            "PREFECT_API_URL": self.api_url,
            "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{self.dir / 'prefect.db'}",
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(self.dir / "storage"),
            "PREFECT_PROFILES_PATH": str(self.dir / "profiles.toml"),
            # nothing may reach the network
            "DO_NOT_TRACK": "1",
            "PREFECT_SERVER_ANALYTICS_ENABLED": off,
            "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": off,
            "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": off,
            "PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED": off,
            "PREFECT_SERVER_UI_ENABLED": off,
            "PREFECT_UI_ENABLED": off,
            "PREFECT_SERVER_EPHEMERAL_ENABLED": off,
            "PREFECT_LOGGING_TO_API_ENABLED": off,
            "PREFECT_LOGGING_LEVEL": "CRITICAL",
            # background services that would act on the runs behind the suite's back
            "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": off,
            "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": off,
            "PREFECT_SERVER_SERVICES_FOREMAN_ENABLED": off,
            "PREFECT_SERVER_SERVICES_PAUSE_EXPIRATIONS_ENABLED": off,
            "PREFECT_SERVER_SERVICES_CANCELLATION_CLEANUP_ENABLED": off,
            "PREFECT_SERVER_SERVICES_REPOSSESSOR_ENABLED": off,
            "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": off,
            "PREFECT_SERVER_SERVICES_CLEANUP_RECONCILER_ENABLED": off,
        }


_HOME = _Home()
os.environ.update(_HOME.environment())

import pydantic  # noqa: E402
from prefect import flow, task  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from prefect.context import TaskRunContext, refresh_global_settings_context  # noqa: E402
from prefect.exceptions import NotPausedError, Pause  # noqa: E402
from prefect.flow_engine import run_flow  # noqa: E402
from prefect.flow_runs import resume_flow_run, suspend_flow_run  # noqa: E402
from prefect.input.run_input import AutomaticRunInput  # noqa: E402
from prefect.results import ResultStore  # noqa: E402
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings  # noqa: E402

from prefect.client.schemas.responses import SetStateStatus  # noqa: E402
from prefect.states import Scheduled  # noqa: E402

from loomcheck.peers.base import Completed, Crashed, Ending, Failed, Parked, PeerDriver, folded_state  # noqa: E402
from loomcheck.peers.walker import EmitRefused, WorkerCrash, run_program  # noqa: E402
from loomcheck.contract.driver import Outcome  # noqa: E402
from loomcheck.spec.programs import StepOp  # noqa: E402

refresh_global_settings_context()  # a process that imported Prefect before us gets our settings

FLOW_NAME = "loomcheck-flow"
DEPLOYMENT_NAME = "loomcheck"


# -- the server ----------------------------------------------------------------------------
class _Server:
    """A Prefect API server on loopback, in its own process group."""

    def __init__(self, home: _Home) -> None:
        self.home = home
        self.process: subprocess.Popen[bytes] | None = None
        atexit.register(self.stop, remove=True)

    def start(self, timeout: float = 90.0) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        self.home.dir.mkdir(parents=True, exist_ok=True)
        log = open(self.home.dir / "server.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
             "--host", "127.0.0.1", "--port", str(self.home.port), "--log-level", "error", "--lifespan", "on"],
            env={**os.environ, **self.home.environment()}, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Prefect server exited ({self.process.returncode}); "
                                   f"see {self.home.dir / 'server.log'}")
            try:
                with urllib.request.urlopen(f"{self.home.api_url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the Prefect server did not answer within {timeout} s")

    def stop(self, remove: bool = False) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)  # the group: uvicorn and anything it forked
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            except ProcessLookupError:
                pass
        if remove:
            shutil.rmtree(self.home.dir, ignore_errors=True)


_SERVER = _Server(_HOME)


# -- the peer's primitives -----------------------------------------------------------------
def step_key(flow_run_id: UUID | str, step_id: str) -> str:
    """The step's record in Prefect's result store: one per flow run and step. The step id is
    hashed because the key is a file name in the local result storage."""
    return f"{flow_run_id}-{hashlib.sha256(json.dumps(step_id).encode()).hexdigest()[:32]}"


def _step_key(context: TaskRunContext, parameters: dict[str, JSON]) -> str:
    return step_key(context.task_run.flow_run_id, parameters["step_id"])


@task(name="loomcheck-step", persist_result=True, cache_key_fn=_step_key)
def _step(step_id: str, body: Callable[[], JSON]) -> dict[str, JSON]:
    # The step id travels in the stored value so Prefect's record names the step it holds.
    return {"stepId": step_id, "output": body()}


def _gate_input(condition: dict[str, JSON]) -> type[AutomaticRunInput[Any]]:
    """The RunInput a gate waits for: one field, `value`, of any JSON; its description (which
    Prefect stores with the schema) is the gate's condition."""
    model = pydantic.create_model("LoomGate", value=(Any, ...), __base__=AutomaticRunInput)
    model._description = json.dumps(condition)
    return model


class _WorkerDied(BaseException):
    """A crash fault fired: the worker dies. Prefect's engines classify a BaseException escaping
    the user's code (a KeyboardInterrupt, a SystemExit, a termination signal) as a crash of the
    process running the flow: the task run and the flow run end Crashed, not Failed."""


class _PrefectPeer:
    """The walker's view of Prefect inside one run of the flow."""

    def __init__(self, input: JSON) -> None:
        self._input = input

    def step(self, step_id: str, body: Callable[[], JSON]) -> JSON:
        def dies(run_body: Callable[[], JSON] = body) -> JSON:
            try:
                return run_body()
            except WorkerCrash as crash:
                raise _WorkerDied(str(crash)) from None

        return _step(step_id, dies)["output"]

    def gate(self, index: int, condition: dict[str, JSON]) -> JSON:
        # ADR 0057: Prefect's default key is its own count of pauses in this run, so the
        # i-th suspend call is matched with the i-th stored answer; `index` is not passed.
        return suspend_flow_run(wait_for_input=_gate_input(condition))

    def input(self) -> JSON:
        return self._input


class PrefectDriver(PeerDriver):
    peer = "Prefect"
    distribution = "prefect"
    features: list[str] = ["recover"]

    def __init__(self, guarded: bool = True) -> None:
        super().__init__(guarded=guarded)
        _SERVER.start()
        driver = self

        @flow(name=FLOW_NAME, persist_result=True, validate_parameters=False)
        def loomcheck_flow(execution: str, flowId: str, input: JSON) -> JSON:
            return run_program(driver.flows[flowId], execution, driver.witness, _PrefectPeer(input))

        self.flow = loomcheck_flow
        self.runs: dict[str, UUID] = {}   # execution id -> Prefect flow run id
        with get_client(sync_client=True) as client:
            flow_id = client.create_flow_from_name(FLOW_NAME)
            self.deployment = client.create_deployment(flow_id=flow_id, name=DEPLOYMENT_NAME)

    # -- running ----------------------------------------------------------------------
    def _run(self, execution_id: str) -> Ending:
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(self.runs[execution_id])
        try:
            # Heartbeats are Prefect's liveness signal for zombie detection (an automation,
            # switched off here); their thread costs up to a second at the end of every run.
            with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
                run_flow(self.flow, flow_run=flow_run)
        except Pause:
            pass  # suspend_flow_run exits the run: Prefect has recorded the Suspended state
        except _WorkerDied as died:
            return Crashed(str(died))  # Prefect has recorded the Crashed state
        except Exception as exc:
            if not self._prefect_state(execution_id).is_failed():
                raise
            if isinstance(exc, EmitRefused):  # the walker refused the emit inside the body
                return Failed({"type": "EmitRefusedError", "reason": "kernel-type", "message": str(exc)})
            # An exception Prefect raised inside the flow (loading a gate's input, say):
            # Prefect failed the flow run with it.
            return Failed({"type": type(exc).__name__, "message": str(exc).splitlines()[0]})
        return self._ending(execution_id)

    def _ending(self, execution_id: str) -> Ending:
        """How the run ended, as Prefect reports it (not as the walker saw it)."""
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(self.runs[execution_id])
            state = flow_run.state
            if state is not None and state.is_paused():
                return Parked(self._condition(client, flow_run.id, state))
        if state is not None and state.is_completed():
            return Completed(state.result())
        raise RuntimeError(f"Prefect reports the flow run in state {state!r} after a run that returned")

    @staticmethod
    def _condition(client: Any, flow_run_id: UUID, state: Any) -> dict[str, JSON] | None:
        keyset = state.state_details.run_input_keyset
        if not keyset:
            return None
        # Prefect stores the description as a JSON string; the string is the condition's JSON.
        text = client.read_flow_run_input(flow_run_id, keyset["description"])
        value = json.loads(text) if text else None
        return json.loads(value) if isinstance(value, str) else value

    def translation(self) -> Any:
        from loomcheck.peers.scripts.prefect import PrefectScript

        return PrefectScript(guarded=self.guarded is True)

    # -- the driver interface ----------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        if flow_id not in self.flows:
            return Outcome.refused("FlowDefinitionError", "unknown-flow", f"no flow {flow_id!r}")
        if self.witness.exists(execution_id):
            # The harness chose the id; Prefect's flow run ids are its own, so a second start
            # under one execution id is the id's problem, not the peer's.
            return Outcome.refused("FlowDefinitionError", "duplicate-execution", f"execution {execution_id!r} exists")
        with get_client(sync_client=True) as client:
            flow_run = client.create_flow_run_from_deployment(
                self.deployment, parameters={"execution": execution_id, "flowId": flow_id, "input": input})
        self.runs[execution_id] = flow_run.id
        self.witness.begin(execution_id, flow_id)
        self.witness.append(execution_id, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
        return self.settle(execution_id, self._run(execution_id))

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        if execution_id not in self.runs:
            # Prefect addresses flow runs by its own ids: an execution it never saw has none.
            return Outcome.refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        refused = self.guard(event_type, *self._where(execution_id))
        if refused is not None:
            return refused
        try:
            # Prefect's resume names no gate: event_type has nowhere to go.
            resume_flow_run(self.runs[execution_id], run_input={"value": payload})
        except NotPausedError as exc:
            return Outcome.refused("ResumeRefusedError", "not-suspended", str(exc))
        except RuntimeError as exc:
            if "Reason:" in str(exc):  # the server's schema validation of the run input
                return Outcome.refused("ResumePayloadValidationError", "invalid-payload", str(exc))
            raise
        self.record_answer(execution_id, event_type, payload)
        return self.settle(execution_id, self._run(execution_id))

    def recover(self, execution_id: str) -> Outcome:
        """Prefect's retry of a flow run (the UI's "Retry": propose Scheduled "AwaitingRetry",
        not forced), then the adapter, as the deployment's worker, runs it. Whether the run may
        be retried is the orchestration policy's decision."""
        if execution_id not in self.runs:
            return Outcome.refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        refused = self.guard(None, *self._where(execution_id))
        if refused is not None:
            return refused
        with get_client(sync_client=True) as client:
            result = client.set_flow_run_state(self.runs[execution_id],
                                               Scheduled(name="AwaitingRetry", message="loomcheck recover"))
        if result.status != SetStateStatus.ACCEPT:
            reason = getattr(result.details, "reason", "") or ""
            if self._prefect_state(execution_id).is_final():  # "Run is already COMPLETED."
                return Outcome.refused("ResumeRefusedError", "terminal", f"Prefect: {reason}")
            raise RuntimeError(f"Prefect did not accept the retry ({result.status.value}): {reason}")
        self.witness.append(execution_id, "EXECUTION_RECOVERED", {})
        return self.settle(execution_id, self._run(execution_id))

    def recover_abandoned(self) -> list[str]:
        """The executions whose flow run Prefect reports Crashed, each retried."""
        crashed = [e for e in self.witness.executions() if e in self.runs and self._prefect_state(e).is_crashed()]
        for execution_id in crashed:
            self.recover(execution_id)
        return crashed

    def _where(self, execution_id: str) -> tuple[dict[str, JSON] | None, bool]:
        """Prefect's report for the guard (guarded mode): the condition of the pause the flow
        run is in, or None; and whether it has ended (completed, failed, cancelled; a CRASHED
        run has not: it waits for its retry)."""
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(self.runs[execution_id])
            state = flow_run.state
            if state is None:
                return None, False
            parked = self._condition(client, flow_run.id, state) if state.is_paused() else None
        return parked, state.is_completed() or state.is_failed() or state.is_cancelled()

    def _prefect_state(self, execution_id: str) -> Any:
        with get_client(sync_client=True) as client:
            return client.read_flow_run(self.runs[execution_id]).state

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        sequence = self.sequence(execution_id)
        if execution_id not in self.runs:
            return folded_state(status="pending", flow_id=None, sequence=0)
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(self.runs[execution_id])
            state = flow_run.state
            answers = self._answers(client, flow_run.id)
            on = self._condition(client, flow_run.id, state) if state is not None and state.is_paused() else None
        flow_id = flow_run.parameters.get("flowId")
        status, output, error = self._status(state), None, None
        if status == "completed":
            output = state.result()
        elif status == "failed":
            error = self._error(execution_id)
        steps = self._steps(flow_run.id, flow_id)
        # Prefect's result store holds finished steps only; a task run that crashed mid-way reaches its
        # records through the event pipeline, asynchronously: that one fact comes from the witness.
        steps.update(self.unfinished_steps(execution_id, steps))
        return folded_state(status=status, flow_id=flow_id, sequence=sequence, input=flow_run.parameters.get("input"),
                            answers=answers, suspended_on=on, steps=steps, output=output, error=error)

    @staticmethod
    def _status(state: Any) -> str:
        if state is None:
            return "pending"
        if state.is_paused():
            return "suspended"
        if state.is_completed():
            return "completed"
        if state.is_failed():
            return "failed"
        if state.is_cancelled():
            return "cancelled"
        return "running"  # scheduled, pending, running, crashed: the run has not ended

    @staticmethod
    def _answers(client: Any, flow_run_id: UUID) -> list[JSON]:
        """Prefect's stored answers, `suspended-<i>-response`, in pause-key order."""
        inputs = client.filter_flow_run_input(flow_run_id, key_prefix="suspended-", limit=1000, exclude_keys=set())
        found = []
        for item in inputs:
            parts = item.key.split("-")
            if len(parts) == 3 and parts[2] == "response" and parts[1].isdigit():
                found.append((int(parts[1]), json.loads(item.value)["value"]))
        return [value for _, value in sorted(found, key=lambda pair: pair[0])]

    def _steps(self, flow_run_id: UUID, flow_id: str | None) -> dict[str, JSON]:
        """The program's steps whose value Prefect's result store holds for this flow run."""
        program = self.flows.get(flow_id or "")
        if program is None:
            return {}
        store = ResultStore()
        steps: dict[str, JSON] = {}
        for op in program.body:
            if not isinstance(op, StepOp):
                continue
            key = step_key(flow_run_id, op.id)
            if store.exists(key):
                record = store.read(key).result
                steps[op.id] = {"status": "completed", "attempt": 1, "output": record["output"]}
        return steps

    def _error(self, execution_id: str) -> JSON:
        # Prefect's failed state holds the exception, not a Loom error: the witness's shape.
        log = self.witness.log(execution_id)
        return log[-1]["payload"].get("error") if log and log[-1]["type"] == "EXECUTION_FAILED" else None

    def reset(self) -> None:
        # Flow runs stay on the server (new executions get new flow run ids, and the step keys
        # name the flow run), so a reset is cheap.
        super().reset()
        self.runs.clear()

    def close(self) -> None:
        super().close()
        _SERVER.stop(remove=True)


def make() -> PrefectDriver:
    """Guarded mode (base.py): before an answer or a retry, the adapter checks what every
    Prefect integration checks for itself, from Prefect's own report of the flow run."""
    return PrefectDriver()


def make_raw() -> PrefectDriver:
    """Raw mode: every call goes straight to Prefect, whose ingress rules are judged."""
    return PrefectDriver(guarded=False)
