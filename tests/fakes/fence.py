"""The feature fence: the reference kernel declaring only some features, which
breaks loudly whenever the harness uses one it did not declare (docs/driver.md:
an undeclared method "is not called"). Every breach is kept in `breaches`, so a
test sees it even where a check turned the raise into a finding.

Wraps the reference rather than subclassing it: the reference calls its own
methods (restart after a crash or a configure), which are not the harness's."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

from loomcheck.contract.driver import Hello, Outcome
from loomcheck.contract.needs import options_need, program_needs
from loomcheck.reference.driver import FEATURES, ReferenceDriver
from adr_only_approvals import AdrOnlyRuntime  # tests/: an authenticator of ADR 0117 D2 alone

# The Node example's declared set (examples/node/kernel.mjs HELLO.features).
NODE = frozenset({"fold", "recover", "load-log", "security", "signing"})
ALL = frozenset(FEATURES)


class FenceBreach(AssertionError):
    """The harness used a feature the implementation did not declare."""


class FencedKernel:
    def __init__(self, features: frozenset[str] | set[str], breaches: list[str] | None = None) -> None:
        self.features = frozenset(features)
        self.breaches: list[str] = [] if breaches is None else breaches
        # Without "operation-binding" the kernel verifies ADR 0117 D2's bytes only, as such a kernel would.
        self.inner = (ReferenceDriver(store="memory") if "operation-binding" in self.features
                      else ReferenceDriver(store="memory", runtime_class=AdrOnlyRuntime))
        self.deployed: dict[str, Any] = {}
        self.keys: dict[str, Any] = {}  # the configured authenticator's, for sign

    def _need(self, needs: set[str] | frozenset[str], what: str) -> None:
        missing = sorted(set(needs) - self.features)
        if missing:
            breach = f"{what} needs undeclared feature(s) {', '.join(missing)} (from {_caller()})"
            self.breaches.append(breach)
            raise FenceBreach(breach)

    # -- the base interface, fenced by what it is given --------------------------------
    def hello(self) -> Hello:
        return Hello(name="fenced-reference", version="0", eventSchema=self.inner.hello().eventSchema,
                     features=sorted(self.features))

    def reset(self) -> None:
        self.deployed.clear()
        self.keys = {}
        self.inner.reset()

    def define_flow(self, flow_id: str, program: dict[str, Any]) -> Outcome:
        needs = program_needs(program)
        if flow_id in self.deployed and self.deployed[flow_id] != program:
            needs.add("code-versions")  # K11: a known id deploys a new version
        self._need(needs, f"define_flow {flow_id}")
        outcome = self.inner.define_flow(flow_id, program)
        if outcome.ok:
            self.deployed[flow_id] = program
        return outcome

    def start(self, execution_id: str, flow_id: str, input: Any) -> Outcome:
        return self.inner.start(execution_id, flow_id, input)

    def resume(self, execution_id: str, event_type: str, payload: Any, options: dict[str, Any] | None = None) -> Outcome:
        self._need(options_need(options), f"resume {execution_id} options {sorted(options or {})}")
        return self.inner.resume(execution_id, event_type, payload, options)

    def read_log(self, execution_id: str) -> list[dict[str, Any]]:
        return self.inner.read_log(execution_id)

    def read_state(self, execution_id: str) -> dict[str, Any]:
        return self.inner.read_state(execution_id)

    def close(self) -> None:
        self.inner.close()

    # -- one method per feature ------------------------------------------------------------
    def fold(self, events: list[dict[str, Any]], snapshot: dict[str, Any] | None) -> dict[str, Any]:
        self._need({"fold"}, "fold")
        return self.inner.fold(events, snapshot)

    def load(self, execution_id: str, events: list[dict[str, Any]], snapshot: dict[str, Any] | None) -> Outcome:
        self._need({"load-log"}, f"load {execution_id}")
        return self.inner.load(execution_id, events, snapshot)

    def recover(self, execution_id: str) -> Outcome:
        self._need({"recover"}, f"recover {execution_id}")
        return self.inner.recover(execution_id)

    def recover_abandoned(self) -> list[str]:
        self._need({"recover"}, "recover_abandoned")
        return self.inner.recover_abandoned()

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: Any,
                  options: dict[str, Any] | None = None) -> Outcome:
        self._need({"resume-as"} | options_need(options), f"resume_as {execution_id} options {sorted(options or {})}")
        return self.inner.resume_as(execution_id, flow_id, event_type, payload, options)

    def restart(self) -> None:
        self._need({"restart"}, "restart")
        self.inner.restart()

    def effects(self, execution_id: str) -> list[dict[str, Any]]:
        self._need({"effect-ledger"}, "effects")
        return self.inner.effects(execution_id)

    def configure(self, config: dict[str, Any]) -> Outcome:
        self._need({"security"}, "configure")
        outcome = self.inner.configure(config)
        if outcome.ok:
            self.keys = dict((config.get("authenticator") or {}).get("keys") or {})
        return outcome

    def sign(self, claim: dict[str, Any]) -> dict[str, Any]:
        """Feature "signing", in spec/signing.md's own format: a kernel whose proofs are the suite's."""
        from loomcheck.contract.signing import secrets_of, sign

        self._need({"signing"}, "sign")
        secrets = secrets_of(self.keys, claim.get("actor"))
        event = claim.get("event") or {}
        proof = sign(event.get("type"), event.get("payload"), actor=claim.get("actor"), secret=secrets[-1],
                     exp=claim.get("exp"), execution=claim.get("executionId"), parked_at=claim.get("parkedAtSequence"),
                     discard=claim.get("discardLegacyAnswers")) if secrets else None
        return {"proof": proof} if proof is not None else {"refused": {"reason": "unknown-actor", "message": ""}}

    def parked_at_sequence(self, execution_id: str) -> int | None:
        self._need({"security"}, "parked_at_sequence")
        return self.inner.parked_at_sequence(execution_id)

    def advance_clock(self, ms: int) -> list[str]:
        self._need({"timers"}, "advance_clock")
        return self.inner.advance_clock(ms)

    def warnings(self) -> list[dict[str, Any]]:
        self._need({"legacy-scan"}, "warnings")
        return self.inner.warnings()

    def append_events(self, execution_id: str, events: list[dict[str, Any]]) -> Outcome:
        self._need({"legacy-scan"}, "append_events")
        return self.inner.append_events(execution_id, events)

    def erase(self, execution_id: str) -> None:
        self._need({"legacy-scan"}, "erase")
        self.inner.erase(execution_id)

    def truncate_prefix(self, execution_id: str, upto: int) -> Outcome:
        self._need({"retention"}, "truncate_prefix")
        return self.inner.truncate_prefix(execution_id, upto)

    def arm_kill(self, after_appends: int) -> None:
        self._need({"kill-points"}, "arm_kill")
        raise FenceBreach("the fence runs in process: it cannot be killed")


def _caller() -> str:
    """The suite's frame that made the call: where the leak is."""
    frames = [f for f in traceback.extract_stack()[:-3] if "/harness/session.py" not in f.filename
              and "/fakes/fence.py" not in f.filename]
    for frame in reversed(frames):
        if any(part in frame.filename for part in ("/properties/", "/fleet/", "/explore/", "/harness/")):
            return f"{Path(frame.filename).parent.name}/{Path(frame.filename).name}:{frame.lineno} {frame.name}"
    return "?"


def fenced(features: frozenset[str] | set[str]) -> FencedKernel:
    return FencedKernel(features)


def node_set() -> FencedKernel:
    """A factory for `loomcheck run --impl python:tests.fakes.fence:node_set`."""
    return FencedKernel(NODE)


def fold_only() -> FencedKernel:
    return FencedKernel({"fold"})


def from_env() -> FencedKernel:
    """`LOOMCHECK_FENCE="fold,recover"` (or `"-code-versions"`: every feature but those) picks the set."""
    import os

    named = [f.strip() for f in os.environ.get("LOOMCHECK_FENCE", "").split(",") if f.strip()]
    withheld = {f[1:] for f in named if f.startswith("-")}
    return FencedKernel((ALL - withheld) if withheld else set(named))
