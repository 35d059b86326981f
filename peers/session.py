"""What every peer's glue shares: how a run of the peer ended, what an operation answers, the
guard of a guarded run, the driver interface's state shape, and the witness's bookkeeping.
Plain Python on the standard library, rendered into every peer reproducer (docs/peers.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loomcheck.peers.witness import Witness

JSON = Any


# -- how a run of the peer ended ----------------------------------------------------------
@dataclass(frozen=True)
class Parked:
    condition: dict[str, JSON]   # as the peer surfaced it


@dataclass(frozen=True)
class Completed:
    output: JSON                 # as the peer returned it


@dataclass(frozen=True)
class Failed:
    error: dict[str, JSON]       # {type, message}


@dataclass(frozen=True)
class Crashed:
    where: str                   # the crash fault that fired


Ending = Parked | Completed | Failed | Crashed


# -- what an operation answers --------------------------------------------------------------
@dataclass(frozen=True)
class Refused:
    error: str                   # the refusal's error type
    reason: str                  # a reason of spec/refusals.toml
    message: str = ""


OK, CRASHED = "ok", "ok:crashed"
Done = str | Refused             # OK, CRASHED (the worker died in the operation), or a refusal


def label(done: Done) -> str:
    """The outcome's label, as loomcheck's reports write it: ok, ok:crashed, refused:<reason>."""
    return done if isinstance(done, str) else f"refused:{done.reason}"


def guard_check(kernel_types: frozenset[str], event_type: str | None, parked: dict[str, JSON] | None,
                finished: bool) -> Refused | None:
    """The checks an integration writes before answering a gate, from the peer's report of where
    the execution is parked (`parked`: the condition, or None). `event_type` None: a recovery."""
    if event_type is not None and event_type in kernel_types:
        return Refused("ResumeRefusedError", "kernel-namespace", f"{event_type} is a kernel event type")
    if event_type is None:  # ADR 0104 D4: recovery re-drives crashed executions only
        if parked is not None:
            return Refused("ResumeRefusedError", "not-suspended", "parked: only an answer re-drives it")
        if finished:
            return Refused("ResumeRefusedError", "terminal", "the execution has finished")
        return None
    if parked is None:
        return Refused("ResumeRefusedError", "not-suspended", "the peer reports no pending gate")
    if parked.get("on") != event_type:
        return Refused("ResumeRefusedError", "gate-mismatch", f"parked on {parked.get('on')!r}, not {event_type!r}")
    return None


def folded_state(*, status: str, flow_id: str | None, sequence: int, input: JSON = None,
                 answers: list[JSON] | None = None, suspended_on: dict[str, JSON] | None = None,
                 steps: dict[str, JSON] | None = None, output: JSON = None, error: JSON = None) -> dict[str, JSON]:
    """The driver interface's state shape, filled from what the peer reports."""
    variables: dict[str, JSON] = {"_input": input}
    if answers:
        variables["_resumePayloads"] = list(answers)
        variables["_resumePayload"] = answers[-1]
    return {"sequence": sequence, "status": status, "flowId": flow_id, "suspendedOn": suspended_on,
            "variables": variables, "steps": steps or {}, "output": output, "error": error}


class Session:
    """One adapter's hold on its peer: the flow programs (as JSON), the witness, the mode. A
    peer's glue subclasses it with `start`, `resume`, `read_state` and whatever else it maps.
    `guarded`: True or False for a peer with both modes, None for one with a single, unguarded
    mode (a peer whose own model addresses answers, as DBOS's topics do)."""

    def __init__(self, witness: Witness, guarded: bool | None, kernel_types: frozenset[str]) -> None:
        self.witness = witness
        self.guarded = guarded
        self.kernel_types = kernel_types
        self.programs: dict[str, dict[str, JSON]] = {}

    # -- what a peer's glue supplies (recover and recover_abandoned where crash faults map) --
    def start(self, execution_id: str, flow_id: str, input: JSON) -> Done:
        raise NotImplementedError

    def resume(self, execution_id: str, event_type: str, payload: JSON) -> Done:
        raise NotImplementedError

    def recover(self, execution_id: str) -> Done:
        raise NotImplementedError

    def recover_abandoned(self) -> list[str]:
        raise NotImplementedError

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        raise NotImplementedError

    def define(self, flow_id: str, program: dict[str, JSON]) -> None:
        self.programs[flow_id] = program

    def guard(self, event_type: str | None, parked: dict[str, JSON] | None, finished: bool) -> Refused | None:
        """A guarded run's checks before an answer or a recovery; a raw run checks nothing."""
        return guard_check(self.kernel_types, event_type, parked, finished) if self.guarded is True else None

    # -- the witness ------------------------------------------------------------------
    def sequence(self, execution_id: str) -> int:
        log = self.witness.log(execution_id)
        return log[-1]["seq"] if log else 0

    def unfinished_steps(self, execution_id: str, finished: dict[str, JSON]) -> dict[str, dict[str, JSON]]:
        """Steps the witness saw start that hold no value: a step whose worker died mid-way.
        A peer that records finished steps only cannot tell these; this one fact of the state
        comes from the witness, the only place it exists."""
        started: dict[str, dict[str, JSON]] = {}
        for event in self.witness.log(execution_id):
            payload = event["payload"]
            step_id = payload.get("stepId") if isinstance(payload, dict) else None
            if event["type"] == "STEP_STARTED" and isinstance(step_id, str) and step_id not in finished:
                attempt = payload.get("attempt")
                started[step_id] = {"status": "started", "attempt": attempt if isinstance(attempt, int) else 1,
                                    "output": None}
        return started

    def settle(self, execution_id: str, ending: Ending) -> str:
        """Write how the peer's run ended, as the peer reported it."""
        if isinstance(ending, Parked):
            self.witness.append(execution_id, "EXECUTION_SUSPENDED", {"condition": ending.condition})
        elif isinstance(ending, Completed):
            self.witness.append(execution_id, "EXECUTION_COMPLETED", {"output": ending.output})
        elif isinstance(ending, Failed):
            self.witness.append(execution_id, "EXECUTION_FAILED", {"error": ending.error})
        else:
            return CRASHED  # the worker died: nothing more is written
        return OK

    def open_execution(self, execution_id: str, flow_id: str, input: JSON) -> Refused | None:
        """The start's own checks (a flow the adapter was given, an id not yet used: the caller
        chose it, and a peer would continue or overwrite what it holds under it), then
        EXECUTION_STARTED. A refusal, or None to run the flow."""
        if flow_id not in self.programs:
            return Refused("FlowDefinitionError", "unknown-flow", f"no flow {flow_id!r}")
        if self.witness.exists(execution_id):
            return Refused("FlowDefinitionError", "duplicate-execution", f"execution {execution_id!r} exists")
        self.witness.begin(execution_id, flow_id)
        self.witness.append(execution_id, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
        return None

    def record_answer(self, execution_id: str, event_type: str, payload: JSON) -> None:
        """The peer accepted an answer: the resume-typed event, then EXECUTION_RESUMED."""
        self.witness.append(execution_id, event_type, payload)
        self.witness.append(execution_id, "EXECUTION_RESUMED", payload)

    def reset(self) -> None:
        self.witness.reset()
        self.programs.clear()

    def close(self) -> None:
        self.witness.close()
