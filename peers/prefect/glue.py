"""Prefect's glue: `@flow` / `@task` on the private server (server.py), one deployment whose
flow runs the adapter runs in process as its worker, answers through `resume_flow_run`, and
Prefect's own records read back. The driver (driver.py) and every reproducer (template.py) run
this same code; how each primitive maps: NOTES.md."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable
from uuid import UUID

from loomcheck.peers.prefect.server import SERVER  # first: it sets the environment Prefect reads at import

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

from loomcheck.peers.session import (Completed, Crashed, Done, Ending, Failed, Parked, Refused, Session,  # noqa: E402
                                     folded_state)
from loomcheck.peers.walker import EmitRefused, WorkerCrash, run_program  # noqa: E402
from loomcheck.peers.witness import Witness  # noqa: E402

JSON = Any

refresh_global_settings_context()  # a process that imported Prefect before us gets our settings

FLOW_NAME = "loomcheck-flow"
DEPLOYMENT_NAME = "loomcheck"


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


class PrefectSession(Session):
    """The adapter's hold on Prefect: the server, the deployment, a flow run per execution."""

    def __init__(self, guarded: bool, kernel_types: frozenset[str]) -> None:
        super().__init__(Witness(), guarded, kernel_types)
        SERVER.start()
        session = self

        @flow(name=FLOW_NAME, persist_result=True, validate_parameters=False)
        def loomcheck_flow(execution: str, flowId: str, input: JSON) -> JSON:
            return run_program(session.programs[flowId], execution, session.witness, _PrefectPeer(input),
                               session.kernel_types)

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

    # -- the operations ---------------------------------------------------------------
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Done:
        if flow_id not in self.programs:
            return Refused("FlowDefinitionError", "unknown-flow", f"no flow {flow_id!r}")
        if self.witness.exists(execution_id):
            # The harness chose the id; Prefect's flow run ids are its own, so a second start
            # under one execution id is the id's problem, not the peer's.
            return Refused("FlowDefinitionError", "duplicate-execution", f"execution {execution_id!r} exists")
        with get_client(sync_client=True) as client:
            flow_run = client.create_flow_run_from_deployment(
                self.deployment, parameters={"execution": execution_id, "flowId": flow_id, "input": input})
        self.runs[execution_id] = flow_run.id
        self.witness.begin(execution_id, flow_id)
        self.witness.append(execution_id, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
        return self.settle(execution_id, self._run(execution_id))

    def resume(self, execution_id: str, event_type: str, payload: JSON) -> Done:
        if execution_id not in self.runs:
            # Prefect addresses flow runs by its own ids: an execution it never saw has none.
            return Refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        refused = self.guard(event_type, *self._where(execution_id))
        if refused is not None:
            return refused
        try:
            # Prefect's resume names no gate: event_type has nowhere to go.
            resume_flow_run(self.runs[execution_id], run_input={"value": payload})
        except NotPausedError as exc:
            return Refused("ResumeRefusedError", "not-suspended", str(exc))
        except RuntimeError as exc:
            if "Reason:" in str(exc):  # the server's schema validation of the run input
                return Refused("ResumePayloadValidationError", "invalid-payload", str(exc))
            raise
        self.record_answer(execution_id, event_type, payload)
        return self.settle(execution_id, self._run(execution_id))

    def recover(self, execution_id: str) -> Done:
        """Prefect's retry of a flow run (the UI's "Retry": propose Scheduled "AwaitingRetry",
        not forced), then the adapter, as the deployment's worker, runs it. Whether the run may
        be retried is the orchestration policy's decision."""
        if execution_id not in self.runs:
            return Refused("ResumeRefusedError", "unknown-execution", f"no execution {execution_id!r}")
        refused = self.guard(None, *self._where(execution_id))
        if refused is not None:
            return refused
        with get_client(sync_client=True) as client:
            result = client.set_flow_run_state(self.runs[execution_id],
                                               Scheduled(name="AwaitingRetry", message="loomcheck recover"))
        if result.status != SetStateStatus.ACCEPT:
            reason = getattr(result.details, "reason", "") or ""
            if self._prefect_state(execution_id).is_final():  # "Run is already COMPLETED."
                return Refused("ResumeRefusedError", "terminal", f"Prefect: {reason}")
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
        program = self.programs.get(flow_id or "")
        if program is None:
            return {}
        store = ResultStore()
        steps: dict[str, JSON] = {}
        for op in program["body"]:
            if op["op"] != "step":
                continue
            key = step_key(flow_run_id, op["id"])
            if store.exists(key):
                record = store.read(key).result
                steps[op["id"]] = {"status": "completed", "attempt": 1, "output": record["output"]}
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
        SERVER.stop(remove=True)
