"""The driver interface over a peer's glue: `PeerDriver` checks a flow program, names the peer,
and turns what the glue's `Session` answers into the driver's outcomes. What an adapter may and
may not do, and its two modes (guarded, raw): docs/peers.md."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from pydantic import ValidationError

from loomcheck import __version__
from loomcheck.contract.driver import Hello, Outcome
from loomcheck.peers.session import CRASHED, Done, Session
from loomcheck.spec.programs import FlowProgram, program_features
from loomcheck.spec.vocabulary import vocabulary

JSON = Any

# What the guard decides, so what a guarded run cannot judge the peer on.
GUARD_JUDGES = ("resume.kernel-namespace", "resume.not-suspended", "resume.gate-mismatch", "recovery.skips-parked",
                "refusal.append-nothing", "refusal.typed-reason")


def installed_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def outcome(done: Done) -> Outcome:
    """The driver's outcome for what the glue answered."""
    if isinstance(done, str):
        return Outcome.accepted(crashed=done == CRASHED)
    return Outcome.refused(done.error, done.reason, done.message)


class PeerDriver:
    """A peer adapter's driver. Subclasses set `peer` (display name), `distribution` (the package
    whose version is tested) and `features`, and give `session`, the peer's glue."""

    peer = "peer"
    distribution = ""
    features: list[str] = []

    def __init__(self, session: Session) -> None:
        self.session = session

    # -- identity ---------------------------------------------------------------------
    def hello(self) -> Hello:
        mode = ", raw" if self.session.guarded is False else ""
        return Hello(name=f"{self.peer} (loomcheck adapter{mode})",
                     version=f"{self.distribution} {installed_version(self.distribution)}; adapter {__version__}",
                     eventSchema=vocabulary().current, features=list(self.features))

    def translation(self) -> Any:
        """How this adapter reads as the peer's own source (peers/reproducer.py), for `loomcheck repro`."""
        return None

    # -- the driver interface -------------------------------------------------------------
    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        try:
            FlowProgram.model_validate(program)
        except (ValidationError, ValueError) as exc:
            return Outcome.refused("FlowDefinitionError", "invalid-program", str(exc).splitlines()[0])
        missing = program_features(program) - set(self.features)
        if missing:
            raise NotImplementedError(f"the program needs {', '.join(sorted(missing))}, not mapped to {self.peer}")
        self.session.define(flow_id, program)
        return Outcome.accepted()

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        return outcome(self.session.start(execution_id, flow_id, input))

    def resume(self, execution_id: str, event_type: str, payload: JSON,
               options: dict[str, JSON] | None = None) -> Outcome:
        """A resume's options are dropped: no peer has a counterpart to pass them to."""
        return outcome(self.session.resume(execution_id, event_type, payload))

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        return self.session.read_state(execution_id)

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        return self.session.witness.log(execution_id)

    def reset(self) -> None:
        self.session.reset()

    def close(self) -> None:
        self.session.close()


class RecoveringPeerDriver(PeerDriver):
    """A peer adapter that maps crash faults (feature `recover`): the peer's own recovery."""

    def recover(self, execution_id: str) -> Outcome:
        return outcome(self.session.recover(execution_id))

    def recover_abandoned(self) -> list[str]:
        return self.session.recover_abandoned()
