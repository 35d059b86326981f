"""Writers that record as older kernels did, by EVENT_SCHEMA version (1.15.0, 1.19.0,
1.20.0), and a fleet of them sharing one store and one outside world, one node per
operation (docs/fleet.md#the-writers)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from loomcheck.reference.context import FlowContext, Park, World, is_verdict_for
from loomcheck.reference.errors import KernelRefusal, ResumeRefusedError
from loomcheck.reference.events import Event
from loomcheck.reference.fold import HANDLERS, TERMINAL, Handler, State, fold
from loomcheck.reference.runtime import Appender, Driven, Runtime
from loomcheck.reference.stores.base import StoreError
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.spec.programs import FlowProgram, StepOp
from loomcheck.spec.versions import code_version
from loomcheck.spec.vocabulary import kernel_event_types

JSON = Any
CURRENT = "1.20.0"
PRE_0104 = "1.19.0"
PRE_116 = "1.15.0"
SCHEMAS = (PRE_116, PRE_0104, CURRENT)
OLD = (PRE_116, PRE_0104)


# -- the pre-1.20 fold -----------------------------------------------------------------
def resumed_always(state: State, payload: JSON) -> None:
    """EXECUTION_RESUMED before EVENT_SCHEMA 1.20.0: every payload, null included, is
    an entry (ADR 0104 D3 is what made a null answering no suspend point status-only)."""
    state.status, state.suspended_on = "running", None
    state.variables.setdefault("_resumePayloads", []).append(copy.deepcopy(payload))
    state.variables["_resumePayload"] = copy.deepcopy(payload)


PRE_120_HANDLERS: Mapping[str, Handler] = {**HANDLERS, "EXECUTION_RESUMED": resumed_always}


def pre_120_fold(events: list[Event], base: State | None = None) -> State:
    """The 1.19.0 writer's fold: what an old node reads a log as."""
    return fold(events, base, PRE_120_HANDLERS)


# -- the pre-0104 flow context -----------------------------------------------------------
class Pre0104Context(FlowContext):
    """How a pre-0104 flow ran: a human step's effect throws SuspendError on every
    run, so it never completes and its answers are entries nothing consumes; an
    in-doubt step reads the latest _resumePayload as its verdict, unchecked."""

    def human(self, op: StepOp, point: int | None = None) -> JSON:
        # ADR 0104 Context: the step re-ran its effect and parked again, forever; the
        # park carried no kernel-set stepId (that is 1.20.0, D2).
        self._append("STEP_STARTED", {"stepId": op.id, "attempt": 1})
        raise Park({"on": op.on}, human=True)

    def verdict(self, step_id: str, attempt: int, frame: dict[str, JSON]) -> dict[str, JSON] | None:
        # ADR 0104 D1: "read back from the latest _resumePayload with no check that it
        # still applied"; an old node does not read the new node's DECISION_RECORDED (D2).
        latest = self.state.variables.get("_resumePayload")
        return latest if is_verdict_for(latest, step_id) else None


# -- the writers ---------------------------------------------------------------------------
class CurrentWriter(Runtime):
    """EVENT_SCHEMA 1.20.0: the reference Runtime as it is."""

    schema = CURRENT

    def snapshot_of(self, state: State) -> dict[str, JSON]:
        """What this writer's retention stores as the snapshot (spec/legacy-logs.md section 5)."""
        return state.to_json()


class Pre0104Writer(CurrentWriter):
    """EVENT_SCHEMA 1.19.0: records every non-answer as an answer (ADR 0104 Context)."""

    schema = PRE_0104

    def __init__(self, store: InMemoryEventStore, **kwargs: Any) -> None:
        kwargs.setdefault("context_class", Pre0104Context)
        kwargs.setdefault("handlers", PRE_120_HANDLERS)
        super().__init__(store, **kwargs)

    def scan_legacy(self, *args: Any, **kwargs: Any) -> None:
        return None  # no stray scan before ADR 0104 D2

    def check_answer(self, state: State, answer: JSON) -> None:
        return None  # D1: "The old kernel appended it and re-parked"

    def record_answer(self, append: Appender, state: State, answer: JSON) -> None:
        append("EXECUTION_RESUMED", answer)  # an in-doubt verdict too: an entry

    def recover(self, execution_id: str) -> Driven:
        state, _ = self._existing(execution_id)
        if state.status == "suspended" or state.status in TERMINAL:
            return super().recover(execution_id)  # refused as before (D4)
        self._require_flow(state.flow_id)
        self.check_code(state)
        append = Appender(self.store, execution_id, state.sequence + 1)
        append("EXECUTION_RECOVERED", {})
        append("EXECUTION_RESUMED", {})  # the recovery pair: {} becomes an entry
        return self.drive(execution_id)

    def resume_as(self, execution_id: str, target_flow: str, event_type: str, payload: JSON,
                  options: Any = None) -> Driven:
        state, _ = self._existing(execution_id)
        if state.status == "suspended":
            return super().resume_as(execution_id, target_flow, event_type, payload, options)
        # Crashed or terminal: the kernel namespace only, then the payload as an entry.
        if event_type in kernel_event_types():
            raise ResumeRefusedError("kernel-namespace", f"{event_type} is a kernel event type")
        self._require_flow(target_flow)
        answer = self._plain_payload(payload)
        migrated = self.migrate_state(state, target_flow, None)
        append = Appender(self.store, execution_id, state.sequence + 1)
        append("EXECUTION_MIGRATED", self.migration_record(state, target_flow, None, migrated))
        append(event_type, answer)
        append("EXECUTION_RESUMED", answer)
        return self.drive(execution_id)


class Pre116Writer(Pre0104Writer):
    """EVENT_SCHEMA 1.15.0: a retention snapshot holds only the latest entry."""

    schema = PRE_116

    def snapshot_of(self, state: State) -> dict[str, JSON]:
        snapshot = state.to_json()
        snapshot["variables"].pop("_resumePayloads", None)  # ADR 0057: the list came in 1.16.0
        return snapshot


WRITERS: dict[str, Callable[..., CurrentWriter]] = {PRE_116: Pre116Writer, PRE_0104: Pre0104Writer,
                                                    CURRENT: CurrentWriter}


# -- the store they share -------------------------------------------------------------------
class FleetStore(InMemoryEventStore):
    """The memory store plus retention written here, so the fleet does not depend on
    the store method that is being added beside it (spec/legacy-logs.md section 5)."""

    def retain(self, execution_id: str, upto: int, snapshot: dict[str, JSON]) -> None:
        if upto < 1 or upto >= self.next_seq(execution_id):
            raise StoreError(f"cannot retain {execution_id!r} up to seq {upto}")
        self.put_snapshot(execution_id, upto, {**snapshot, "sequence": upto})
        self._logs[execution_id] = [entry for entry in self._logs.get(execution_id, []) if entry[0] > upto]


# -- the fleet --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Done:
    """What one node did with one operation: ok, ok and the worker crashed, or refused."""

    result: str

    @property
    def performed(self) -> bool:
        return not self.result.startswith("refused")


class Fleet:
    """Nodes of several EVENT_SCHEMA versions over one store and one world. Each
    operation runs on a fresh node of the chosen version, as a request landing on
    some process of a rolling deploy would (no runtime memory carries over)."""

    def __init__(self, flows: Mapping[str, Mapping[str, JSON]], execution_id: str = "x") -> None:
        self.store = FleetStore()
        self.world = World()
        self.flows = {flow_id: dict(program) for flow_id, program in flows.items()}
        self.parsed = {flow_id: FlowProgram.model_validate(program) for flow_id, program in self.flows.items()}
        self.execution_id = execution_id

    def node(self, schema: str) -> CurrentWriter:
        runtime = WRITERS[schema](self.store, world=self.world)
        for flow_id, program in self.flows.items():
            runtime.register(flow_id, self.parsed[flow_id], code_version(program))
        return runtime

    def view(self, schema: str) -> State:
        """The execution's folded state as a node of that version reads it."""
        return self.node(schema).state(self.execution_id)

    def perform(self, schema: str, operation: Mapping[str, JSON]) -> Done:
        """Run one operation (start, resume, resumeAs, recover, truncate, append) on a node."""
        node = self.node(schema)
        try:
            driven = self._dispatch(node, operation)
        except KernelRefusal as refusal:
            return Done(f"refused:{refusal.reason}")
        except StoreError:
            return Done("refused:retention")
        crashed = isinstance(driven, Driven) and driven.crashed
        return Done("crashed" if crashed else "ok")

    def _dispatch(self, node: CurrentWriter, operation: Mapping[str, JSON]) -> Driven | None:
        op, x = operation["op"], self.execution_id
        if op == "start":
            return node.start(x, str(operation.get("flowId") or "f"), operation.get("payload"))
        if op == "resume":
            return node.resume(x, str(operation["type"]), operation.get("payload"))
        if op == "resumeAs":
            return node.resume_as(x, str(operation["flowId"]), str(operation["type"]), operation.get("payload"))
        if op == "recover":
            return node.recover(x)
        if op == "truncate":
            self.retain(node, int(operation["upto"]))
            return None
        if op == "append":
            events = list(operation.get("events") or [])
            self.store.append(x, self.store.next_seq(x), [(e["type"], e.get("payload")) for e in events])
            return None
        raise ValueError(f"unknown fleet operation {op!r}")

    def retain(self, node: CurrentWriter, upto: int) -> None:
        """A truncate-prefix retention step by this node: the state as of `upto`, folded
        by THIS node and stored in ITS snapshot format, then the prefix deleted."""
        snapshot = self.store.get_snapshot(self.execution_id)
        base_seq = snapshot[0] if snapshot else 0
        if upto <= base_seq:
            raise StoreError("already retained away")
        base = State.from_json(snapshot[1]) if snapshot else None
        if base is not None:
            base.sequence = base_seq
        kept = fold(self.store.read(self.execution_id, after=base_seq, upto=upto), base, node.handlers)
        self.store.retain(self.execution_id, upto, node.snapshot_of(kept))

    def log(self) -> list[dict[str, JSON]]:
        return [event.to_json() for event in self.store.read(self.execution_id)]

    def snapshot(self) -> dict[str, JSON] | None:
        found = self.store.get_snapshot(self.execution_id)
        return found[1] if found else None


__all__ = ["CURRENT", "PRE_0104", "PRE_116", "SCHEMAS", "OLD", "WRITERS", "CurrentWriter", "Pre0104Writer",
           "Pre116Writer", "Pre0104Context", "Fleet", "FleetStore", "Done", "PRE_120_HANDLERS", "pre_120_fold",
           "resumed_always"]
