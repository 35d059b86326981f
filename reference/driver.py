"""The reference kernel behind the driver interface (contract/driver.py).

`ReferenceDriver()` uses the embedded default store, SQLite, in a private
temporary file; `ReferenceDriver(store="memory")` is the fast in-memory one.
`synchronous` is the SQLite store's durability (docs/stores.md): FULL, the default
for a store in `directory`, survives a power loss; NORMAL only a process crash.
The seams `runtime_class` and `context_class` let the project's tests build
seeded mutants of the reference without copying it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from pydantic import ValidationError

from loomcheck import __version__
from loomcheck.contract.driver import JSON, Hello, Outcome
from loomcheck.reference.clock import Clock
from loomcheck.reference.context import FlowContext, World
from loomcheck.reference.durable import Durable
from loomcheck.reference.errors import KernelRefusal, ResumePayloadValidationError
from loomcheck.reference.events import Event, NotJson, check_text, to_plain_json
from loomcheck.reference.fold import HANDLERS, Handler, State, fold
from loomcheck.reference.limits import MAX_BYTES, MAX_DEPTH
from loomcheck.reference.runtime import Driven, Runtime
from loomcheck.reference.security import ResumeOptions, Security, compose
from loomcheck.reference.stores.base import EventStore, StoreError
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.spec.canonical import CanonicalError
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.versions import code_version
from loomcheck.spec.vocabulary import vocabulary

if TYPE_CHECKING:
    from loomcheck.reference.stores.sqlite import Synchronous

FEATURES = ["fold", "load-log", "recover", "resume-as", "restart", "effect-ledger", "input-validation",
            "resume-schemas", "human-steps", "in-doubt", "parallel", "emit-guard", "view-digest", "timers",
            "security", "operation-binding", "code-versions", "state-migration", "legacy-scan", "retention"]
# On SQLite the reference is durable (its store, ledger, clock and warnings live under
# LOOMCHECK_STORE_DIR when that is set) and can kill itself at an append (docs/protocol.md).
PROCESS_FEATURES = ["durable", "kill-points"]


class ReferenceDriver:
    name = "loomcheck-reference"

    def __init__(self, store: str | EventStore = "sqlite", *, directory: str | None = None,
                 synchronous: Synchronous | None = None,
                 runtime_class: Callable[..., Runtime] = Runtime,
                 context_class: Callable[..., FlowContext] = FlowContext,
                 handlers: Mapping[str, Handler] = HANDLERS) -> None:
        self._tmpdir: str | None = None
        # A store in a directory outlives the process: FULL, so no acknowledged event is lost
        # even to a power loss. The private temporary one is deleted at close and never
        # reopened, so nothing a sync keeps could ever be read: NORMAL, unless told otherwise.
        self.synchronous: Synchronous = synchronous or ("FULL" if directory else "NORMAL")
        self.durable = Durable(Path(directory), fsync=self.synchronous == "FULL") if directory and store == "sqlite" else None
        self.store = self._make_store(store)
        self.handlers = handlers
        self.world = World()  # the outside world effects act on; a crash does not reset it
        self.clock = Clock()  # the deployment's clock: a restart keeps it
        self.security = Security()  # the deployment's config: a restart keeps it
        self.warned: list[dict[str, JSON]] = []  # every on_warn, in order: the operator's log survives a restart
        if self.durable is not None:  # a new process on an existing directory finds all of it again
            self.world.ledger, self.warned = self.durable.ledger, self.durable.warnings
            self.clock.now_ms = self.durable.clock(self.clock.now_ms)
        self._make_runtime = lambda: runtime_class(self.store, context_class=context_class, handlers=handlers,
                                                   world=self.world, clock=self.clock, security=self.security,
                                                   on_warn=self.warned.append)
        self.runtime = self._make_runtime()

    def _make_store(self, store: str | EventStore) -> EventStore:
        if not isinstance(store, str):
            return store
        if store == "memory":
            return InMemoryEventStore()
        if store == "sqlite":
            from loomcheck.reference.stores.sqlite import SqliteEventStore

            if self.durable is not None:
                return SqliteEventStore(self.durable.directory / "events.db", synchronous=self.synchronous)
            self._tmpdir = tempfile.mkdtemp(prefix="loomcheck-ref-")
            return SqliteEventStore(os.path.join(self._tmpdir, "events.db"), synchronous=self.synchronous)
        raise ValueError(f"unknown store {store!r} (use 'sqlite' or 'memory')")

    # -- the driver interface ----------------------------------------------------
    def hello(self) -> Hello:
        durable = PROCESS_FEATURES if self._is_sqlite() else []
        return Hello(name=self.name, version=__version__, eventSchema=vocabulary().current,
                     features=list(FEATURES) + durable)

    def _is_sqlite(self) -> bool:
        from loomcheck.reference.stores.sqlite import SqliteEventStore

        return isinstance(self.store, SqliteEventStore)

    def reset(self) -> None:
        self.store.clear()
        self.world.ledger.clear()
        self.clock = Clock()
        self.security = Security()
        self.warned.clear()
        if self.durable is not None:
            self.durable.clear(self.clock.now_ms)
        self.runtime = self._make_runtime()

    def arm_kill(self, after_appends: int) -> None:
        """Feature "kill-points": die by SIGKILL once `after_appends` more appends are
        committed, whatever operation is running (the harness kills us at exact points).
        Only ever called in a process of our own: `loomcheck serve`."""
        left = [after_appends]
        append = type(self.store).append

        def append_then_maybe_die(execution_id: str, expected_seq: int, entries: Any) -> Any:
            written = append(self.store, execution_id, expected_seq, entries)
            left[0] -= 1
            if left[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)
            return written

        self.store.append = append_then_maybe_die  # type: ignore[method-assign]

    def configure(self, config: dict[str, JSON]) -> Outcome:
        """Compose the runtime with a security config (ADR 0117 D2, D3); flows and
        executions are kept. Refused, changing nothing, when it cannot compose: malformed
        (invalid-config), or as ADR 0117 D2 and D3 say."""
        problem = config_problem(config)
        if problem is not None:
            return Outcome.refused("ConfigError", "invalid-config", problem)
        try:
            security = compose(config, self.clock.now)  # ADR 0117 D3: strict refuses to compose without one
        except KernelRefusal as refusal:
            return Outcome.refused(refusal.error, refusal.reason, refusal.message)
        except (TypeError, ValueError) as exc:  # the authenticator's own reading of its key material
            return Outcome.refused("ConfigError", "invalid-config", str(exc))
        self.security = security
        self.restart()
        return Outcome.accepted()

    def advance_clock(self, ms: int) -> list[str]:
        """Move the clock forward; the timer service wakes every due timed park."""
        self.clock.advance(ms)
        if self.durable is not None:
            self.durable.save_clock(self.clock.now_ms)
        return self.runtime.fire_timers()

    def parked_at_sequence(self, execution_id: str) -> int | None:
        return self.runtime.parked_at_sequence(execution_id)

    def incarnation(self, execution_id: str) -> int:
        """Not a driver operation: which execution under this id it is, for a wrapper that signs the
        reference's proofs itself (spec/signing.md section 10; tests/permuted/proofs.py)."""
        return self.runtime.incarnation(execution_id)

    def restart(self) -> None:
        """A process restart: the runtime's memory is gone; the store, the deployed
        flows (code) and the outside world remain."""
        flows, versions = dict(self.runtime.flows), dict(self.runtime.versions)
        self.runtime = self._make_runtime()
        for flow_id, program in flows.items():
            self.runtime.register(flow_id, program, versions.get(flow_id))

    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        try:
            check_text(flow_id, MAX_BYTES)
            if not isinstance(program, dict):
                raise NotJson(f"a program is an object, not {type(program).__name__}")
            parsed = FlowProgram.model_validate(program)
            # Names a store could not write, and values past the ingress bounds, are refused
            # here, not mid-run (every value a run records is part of the program). A gate's
            # view is never stored (only its digest is), and canonical JSON has already checked it.
            for part in ({**program, "body": None}, parsed.model_dump(exclude={"body": {"__all__": {"view"}}})):
                to_plain_json(part, MAX_DEPTH, MAX_BYTES)
            version = code_version(program)  # ADR 0056 Context (K11): the hash of the program as defined
        except CanonicalError as exc:
            return Outcome.refused("FlowDefinitionError", "invalid-program", f"the program has no code version: {exc}")
        except NotJson as exc:
            return Outcome.refused("FlowDefinitionError", "invalid-program", f"not storable JSON: {exc}")
        except ValidationError as exc:
            return Outcome.refused("FlowDefinitionError", "invalid-program", _first_error(exc))
        self.runtime.register(flow_id, parsed, version)
        return Outcome.accepted()

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        return self._refusable(lambda: self.runtime.start(execution_id, flow_id, input))

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        return self._refusable(lambda: self.runtime.resume(execution_id, event_type, payload, _options(options)))

    def recover(self, execution_id: str) -> Outcome:
        return self._refusable(lambda: self.runtime.recover(execution_id))

    def recover_abandoned(self) -> list[str]:
        return self.runtime.recover_abandoned()

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: dict[str, JSON] | None = None) -> Outcome:
        return self._refusable(lambda: self.runtime.resume_as(execution_id, flow_id, event_type, payload,
                                                              _options(options)))

    def effects(self, execution_id: str) -> list[dict[str, JSON]]:
        return [{"stepId": e["stepId"], "attempt": e["attempt"]} for e in self.world.of(execution_id)]

    def load(self, execution_id: str, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> Outcome:
        problem = import_problem(execution_id, events, snapshot)
        if problem is not None:
            return Outcome.refused("FlowDefinitionError", "invalid-program", f"log cannot be imported: {problem}")
        if self.runtime.exists(execution_id):
            return Outcome.refused("FlowDefinitionError", "duplicate-execution", f"{execution_id!r} exists")
        first = 1
        try:
            if snapshot is not None:
                seq = snapshot.get("sequence") or 0
                self.store.put_snapshot(execution_id, seq, snapshot)
                first = seq + 1
            entries = [(e["type"], e.get("payload")) for e in events]
            if entries:  # ADR 0077 D5: a rehydrated log is recorded as given, its answers not parsed again
                self.store.append(execution_id, first, entries)
        except StoreError as exc:
            self.store.erase(execution_id)  # all or nothing: a snapshot without its events is no import
            return Outcome.refused("FlowDefinitionError", "invalid-program", f"log cannot be imported: {exc}")
        return Outcome.accepted()

    # -- legacy logs and retention (ADR 0104 D2, R1a) ------------------------------------
    def warnings(self) -> list[dict[str, JSON]]:
        return [dict(w) for w in self.warned]

    def append_events(self, execution_id: str, events: list[dict[str, JSON]]) -> Outcome:
        """Another node of the fleet writes: the events are appended as given, nothing runs."""
        problem = import_problem(execution_id, events, None)
        if problem is not None:
            return Outcome.refused("FlowDefinitionError", "invalid-program", f"events cannot be appended: {problem}")
        entries = [(e["type"], e.get("payload")) for e in events]
        try:
            self.store.append(execution_id, self.store.next_seq(execution_id), entries)
        except StoreError as exc:
            return Outcome.refused("FlowDefinitionError", "invalid-program", f"events cannot be appended: {exc}")
        return Outcome.accepted()

    def truncate_prefix(self, execution_id: str, upto: int) -> Outcome:
        return self._refusable(lambda: self.runtime.truncate_prefix(execution_id, upto))

    def erase(self, execution_id: str) -> None:
        self.store.erase(execution_id)

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        return [event.to_json() for event in self.runtime.log(execution_id)]

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        return self.runtime.state(execution_id).to_json()

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        return fold_json(events, snapshot, self.handlers)

    def close(self) -> None:
        self.store.close()
        if self.durable is not None:
            self.durable.close()
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    # -- helpers -----------------------------------------------------------------
    def _refusable(self, operation: Callable[[], Any]) -> Outcome:
        try:
            driven = operation()
        except KernelRefusal as refusal:
            return Outcome.refused(refusal.error, refusal.reason, refusal.message)
        if isinstance(driven, Driven) and driven.crashed:
            self.restart()  # the worker died: nothing of its memory survives
            return Outcome.accepted(crashed=True)
        return Outcome.accepted()


def fold_json(events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None,
              handlers: Mapping[str, Handler] = HANDLERS) -> dict[str, JSON]:
    """The reference fold over logs in the driver's JSON form (used for differential checks)."""
    base = State.from_json(snapshot) if snapshot is not None else None
    if base is not None and snapshot is not None:
        base.sequence = int(snapshot.get("sequence") or 0)
    typed = [Event("", int(e.get("seq") or 0), e.get("type"), e.get("payload")) for e in events]
    return fold(typed, base, handlers).to_json()


def _options(options: JSON) -> ResumeOptions:
    """The resume options, an object when given (docs/driver.md); anything else is refused."""
    if options is not None and not isinstance(options, dict):
        raise ResumePayloadValidationError("invalid-payload", f"the resume options are {type(options).__name__}, "
                                                              f"not an object")
    return ResumeOptions.from_json(options)


def config_problem(config: JSON) -> str | None:
    """Why `config` is not {strict?, requireResumeAuthenticator?, authenticator?: {gates?, keys?,
    requireActor?}} with docs/driver.md's types, or None. Whether a secret is strong enough is
    compose's to say (weak-secret, ADR 0117 D2)."""
    try:
        to_plain_json(config, MAX_DEPTH, MAX_BYTES)
    except NotJson as exc:
        return f"the config is not storable JSON: {exc}"
    if not isinstance(config, dict):
        return f"the config is {type(config).__name__}, not an object"
    spec = config.get("authenticator")
    flags = [(config, "strict"), (config, "requireResumeAuthenticator")] + ([(spec, "requireActor")]
                                                                             if isinstance(spec, dict) else [])
    for holder, flag in flags:
        if flag in holder and type(holder[flag]) is not bool:
            return f"{flag} is {holder[flag]!r:.40}, not true or false"
    if spec is None:
        return None
    if not isinstance(spec, dict):
        return f"authenticator is {type(spec).__name__}, not an object"
    gates, keys = spec.get("gates", []), spec.get("keys", {})
    if not isinstance(gates, list) or not all(type(gate) is str for gate in gates):
        return "authenticator.gates is not a list of gate names"
    if not isinstance(keys, dict):
        return "authenticator.keys is not an object of actor to secret or [secrets]"
    for actor, material in keys.items():
        secrets = material if isinstance(material, list) else [material]
        if not secrets or not all(type(secret) is str for secret in secrets):
            return f"the key of actor {actor!r:.40} is not a secret or a non-empty list of secrets"
    return None


def import_problem(execution_id: JSON, events: JSON, snapshot: JSON) -> str | None:
    """Why a log to import (load, append_events) is not [{type, payload}, ...] under a storable
    id after an optional snapshot {sequence, ...}, or None. The store judges the types and payloads."""
    try:
        check_text(execution_id, MAX_BYTES)
    except NotJson as exc:
        return f"the execution id is not storable text: {exc}"
    if not isinstance(events, list) or not all(isinstance(e, dict) and "type" in e for e in events):
        return "the events are not a list of {type, payload} objects"
    if snapshot is not None:
        sequence = snapshot.get("sequence") if isinstance(snapshot, dict) else None
        if not isinstance(snapshot, dict) or not (sequence is None or (type(sequence) is int and sequence >= 0)):
            return "the snapshot is not a folded state whose sequence is a count of events"
    return None


def _first_error(exc: ValidationError) -> str:
    problem = exc.errors()[0]
    where = ".".join(str(p) for p in problem["loc"]) or "(program)"
    return f"{where}: {problem['msg']}"[:300]


def memory() -> ReferenceDriver:
    """Factory for `--impl python:loomcheck.reference.driver:memory`."""
    return ReferenceDriver(store="memory")


def sqlite() -> ReferenceDriver:
    """Factory for `--impl reference` / `reference:sqlite` (the default). Durable under
    LOOMCHECK_STORE_DIR when the harness sets it (docs/protocol.md), synchronous=FULL."""
    return ReferenceDriver(store="sqlite", directory=os.environ.get("LOOMCHECK_STORE_DIR") or None)


def sqlite_normal() -> ReferenceDriver:
    """Factory for `--impl reference:sqlite:normal`: as `sqlite`, with synchronous=NORMAL and
    the ledger and clock files unsynced: durable across a process crash, not a power loss."""
    return ReferenceDriver(store="sqlite", directory=os.environ.get("LOOMCHECK_STORE_DIR") or None,
                           synchronous="NORMAL")
