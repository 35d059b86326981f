"""What every peer adapter shares: flow definitions, the witness, and the ending
of a run. A peer adapter subclasses `PeerDriver` and supplies `start`, `resume`,
`read_state` (from the peer's own API) and whatever optional features it maps.

What an adapter may and may not do (docs/peers.md says it at length):
- it translates; it does not judge. Every refusal it returns is one the peer
  made (an exception the peer raised, mapped to a reason of spec/refusals.toml)
  or one the peer's API makes unavoidable (an execution id the peer has never
  seen). Where the peer has no rule the ADRs require, the adapter passes the call
  through and the suite reports what the peer did; the peer's manifest declares
  the known divergences with their reasons.
- its log is the witness (witness.py); its state is the peer's own.

Two modes. A peer with no ingress rules of its own (LangGraph's and Prefect's
resumes name no gate) accepts every misaddressed answer, and what it then does
with the answer colours every later check. So such an adapter runs in two modes,
two reports (a peer that addresses answers itself, as DBOS's topics do, has one
unguarded mode):
- guarded (the default, `--impl <peer>`): before answering, the adapter does what
  every integration of the peer has to write for itself, reading the PEER's own
  report of where the execution is parked (`guard()` below). The invariants that
  judge exactly that glue (GUARD_JUDGES) are declared not-applicable in the
  guarded manifest, never passed; everything else judges the peer.
- raw (`--impl <peer>-raw`): every call passes straight through, so the ingress
  invariants judge what the peer itself does with a misaddressed answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from typing import Any

from pydantic import ValidationError

from loomcheck import __version__
from loomcheck.peers.witness import Witness
from loomcheck.contract.driver import Hello, Outcome
from loomcheck.spec.programs import FlowProgram, program_features
from loomcheck.spec.vocabulary import vocabulary

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

# What the guard decides, so what a guarded run cannot judge the peer on.
GUARD_JUDGES = ("resume.kernel-namespace", "resume.not-suspended", "resume.gate-mismatch", "recovery.skips-parked",
                "refusal.append-nothing", "refusal.typed-reason")


def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


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


class PeerDriver:
    """Shared parts of a peer adapter. Subclasses set `peer` (display name),
    `distribution` (the package whose version is tested) and `features`."""

    peer = "peer"
    distribution = ""
    features: list[str] = []

    def __init__(self, witness: Witness | None = None, guarded: bool | None = None) -> None:
        """`guarded`: True or False for an adapter with both modes, None for one with a single,
        unguarded mode (a peer whose own model addresses answers, as DBOS's topics do)."""
        self.witness = witness or Witness()
        self.flows: dict[str, FlowProgram] = {}
        self.guarded = guarded

    # -- the integration's own checks (guarded mode) -----------------------------------------
    def guard(self, event_type: str | None, parked: dict[str, JSON] | None, finished: bool) -> Outcome | None:
        """The checks an integration writes before answering a gate, from the peer's report
        of where the execution is parked (`parked`: the condition, or None). `event_type`
        None: a recovery. A refusal, or None to go on. Raw mode checks nothing."""
        if self.guarded is not True:
            return None
        if event_type is not None and event_type in vocabulary().kernel_types:
            return Outcome.refused("ResumeRefusedError", "kernel-namespace", f"{event_type} is a kernel event type")
        if event_type is None:  # ADR 0104 D4: recovery re-drives crashed executions only
            if parked is not None:
                return Outcome.refused("ResumeRefusedError", "not-suspended", "parked: only an answer re-drives it")
            if finished:
                return Outcome.refused("ResumeRefusedError", "terminal", "the execution has finished")
            return None
        if parked is None:
            return Outcome.refused("ResumeRefusedError", "not-suspended", "the peer reports no pending gate")
        if parked.get("on") != event_type:
            return Outcome.refused("ResumeRefusedError", "gate-mismatch", f"parked on {parked.get('on')!r}, not {event_type!r}")
        return None

    # -- reproducers ------------------------------------------------------------------
    def translation(self) -> Any:
        """How this adapter reads as the peer's own source (adapters/scripts/), for
        `loomcheck repro`; None when it has none yet."""
        return None

    # -- identity ---------------------------------------------------------------------
    def hello(self) -> Hello:
        mode = ", raw" if self.guarded is False else ""
        return Hello(name=f"{self.peer} (loomcheck adapter{mode})",
                     version=f"{self.distribution} {installed_version(self.distribution)}; adapter {__version__}",
                     eventSchema=vocabulary().current, features=list(self.features))

    # -- flows --------------------------------------------------------------------------
    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        try:
            parsed = FlowProgram.model_validate(program)
        except (ValidationError, ValueError) as exc:
            return Outcome.refused("FlowDefinitionError", "invalid-program", str(exc).splitlines()[0])
        missing = program_features(program) - set(self.features)
        if missing:
            raise NotImplementedError(f"the program needs {', '.join(sorted(missing))}, not mapped to {self.peer}")
        self.flows[flow_id] = parsed
        return Outcome.accepted()

    # -- the witness ------------------------------------------------------------------
    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        return self.witness.log(execution_id)

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

    def settle(self, execution_id: str, ending: Ending) -> Outcome:
        """Write how the peer's run ended, as the peer reported it."""
        if isinstance(ending, Parked):
            self.witness.append(execution_id, "EXECUTION_SUSPENDED", {"condition": ending.condition})
        elif isinstance(ending, Completed):
            self.witness.append(execution_id, "EXECUTION_COMPLETED", {"output": ending.output})
        elif isinstance(ending, Failed):
            self.witness.append(execution_id, "EXECUTION_FAILED", {"error": ending.error})
        else:
            return Outcome.accepted(crashed=True)  # the worker died: nothing more is written
        return Outcome.accepted()

    def open_execution(self, execution_id: str, flow_id: str, input: JSON) -> Outcome | None:
        """The start's own checks (a flow the adapter was given, an id not yet used: the caller
        chose it, and a peer would continue or overwrite what it holds under it), then
        EXECUTION_STARTED. A refusal, or None to run the flow."""
        if flow_id not in self.flows:
            return Outcome.refused("FlowDefinitionError", "unknown-flow", f"no flow {flow_id!r}")
        if self.witness.exists(execution_id):
            return Outcome.refused("FlowDefinitionError", "duplicate-execution", f"execution {execution_id!r} exists")
        self.witness.begin(execution_id, flow_id)
        self.witness.append(execution_id, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
        return None

    def record_answer(self, execution_id: str, event_type: str, payload: JSON) -> None:
        """The peer accepted an answer: the resume-typed event, then EXECUTION_RESUMED."""
        self.witness.append(execution_id, event_type, payload)
        self.witness.append(execution_id, "EXECUTION_RESUMED", payload)

    def reset(self) -> None:
        self.witness.reset()
        self.flows.clear()

    def close(self) -> None:
        self.witness.close()
