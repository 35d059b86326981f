"""The stdio transport: a driver (contract/driver.py) that runs an untrusted implementation as
a child process (protocol/child.py) and speaks the driver protocol to it. Whatever the child
does becomes an `ImplementationFailed` with a reason, never a hang nor a traceback of the
harness: docs/protocol.md, "What the harness does when a program misbehaves"."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from loomcheck.contract.driver import JSON, Outcome
from loomcheck.contract.jsondata import ENVELOPE
from loomcheck.contract.boundary import ImplementationFailed, RunAborted
from loomcheck.protocol import wire
from loomcheck.protocol.child import HELD, ChildProcess, Fault, Limits
from loomcheck.protocol.messages import OUTCOMES, PROTOCOL

FOLLOW_SECONDS = 0.2  # after a line that answers nothing: whether more come, unasked (a flood)


@dataclass
class Deployment:
    """What a restart of a durable kernel's process must be given again: its code (the
    flows defined) and its configuration. The store is the kernel's."""

    flows: dict[str, dict[str, JSON]] = field(default_factory=dict)
    config: dict[str, JSON] | None = None


class StdioDriver:
    """A driver whose implementation is a program speaking the protocol on stdio."""

    transport = "stdio"

    def __init__(self, command: str | list[str], limits: Limits = Limits(), *, validate: bool = False,
                 deadline: float | None = None, env: dict[str, str] | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("the stdio command is empty")
        self.command = command if isinstance(command, str) else shlex.join(command)
        self.limits = limits
        self.env = env or {}
        self.deadline = deadline
        self.validator = _validator() if validate else None
        self.store_dir = tempfile.mkdtemp(prefix="loomcheck-stdio-")  # LOOMCHECK_STORE_DIR: durable kernels keep their store here
        self.process: ChildProcess | None = None
        self.first_hello: dict[str, JSON] | None = None
        self.next_id = 1
        self.restarts_left = limits.restarts
        self.launches = 0
        self.lost: str | None = None   # why the current process holds no state the harness made
        self.deployment = Deployment()
        self.deepest_sent = 0        # arrays/objects of the deepest request so far
        self.died_in_flight = False  # the last kill(during=...) found the process dead before it answered
        # When a list: every line sent and received, as (launch, "sent"|"received", line), for `loomcheck repro`.
        self.transcript: list[tuple[int, str, bytes]] | None = None

    # -- lifecycle ---------------------------------------------------------------------
    def _ensure(self) -> ChildProcess:
        if self.process is not None:
            if self.process.proc.poll() is None:
                return self.process
            died = self.process
            self._fault("crash", f"exited between requests ({died.exit_status()}){died.stderr_tail()}")
        if self.launches > 0:
            if self.restarts_left <= 0:
                raise RunAborted("restarts", f"the budget of {self.limits.restarts} restarts of {self.command!r} is "
                                             f"spent (--restarts)")
            self.restarts_left -= 1
        self._launch()
        assert self.process is not None
        return self.process

    def _launch(self) -> None:
        env = {**os.environ, **self.env, "LOOMCHECK_STORE_DIR": self.store_dir}
        try:
            self.process = ChildProcess(self.argv, env, self.limits)
        except OSError as exc:
            hint = f" ({self.argv[0]!r} is not a file here, nor on PATH)" if isinstance(exc, FileNotFoundError) else ""
            raise ImplementationFailed("start", f"cannot run {self.command!r}: {exc.strerror or exc}{hint}", "crash") from None
        self.launches += 1
        hello = self._exchange({"op": "hello", "protocol": PROTOCOL}, self.limits.hello_timeout)
        problem = _hello_problem(hello)
        if problem:
            self._fault("bad-hello", f"hello: {problem}")
        if self.first_hello is None:
            self.first_hello = hello
        elif hello != self.first_hello:
            self._fault("lying-hello", f"said {_short(self.first_hello)} when first started and {_short(hello)} "
                                       f"after a restart")

    def kill(self, during: dict[str, JSON] | None = None, after_appends: int | None = None) -> None:
        """A real crash (docs/protocol.md, feature "durable"): SIGKILL the process, now or
        while `during` runs (at its `after_appends`-th append with feature "kill-points",
        else just after it answers), then start a new one on the same store directory and
        redeploy the same flows and configuration. Neither death is a fault of the
        implementation, so neither spends the budget of restarts."""
        self.died_in_flight = False
        if during is not None:
            if after_appends is not None:
                self._request("arm-kill", {"afterAppends": after_appends})
            fields = {k: v for k, v in during.items() if k != "op"}
            try:
                self._request(str(during["op"]), fields)
            except ImplementationFailed as died:
                if died.reason != "crash":
                    raise
                self.lost = None  # the death we asked for
                self.died_in_flight = True
        if self.process is not None:
            self.process.kill()
            self.process = None
        self._launch_again_on_the_same_store()

    def _launch_again_on_the_same_store(self) -> None:
        self._launch()
        for flow, program in self.deployment.flows.items():
            self._request("define", {"flow": flow, "program": program})
        if self.deployment.config is not None:
            self._request("configure", {"config": self.deployment.config})

    def close(self) -> None:
        if self.process is not None:
            try:
                if self.process.proc.poll() is None:
                    self.process.send(b'{"id":0,"op":"shutdown"}\n', 2)
                    self.process.proc.wait(timeout=2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
            self.process.kill()
            self.process = None
        shutil.rmtree(self.store_dir, ignore_errors=True)

    # -- one exchange --------------------------------------------------------------------
    def _request(self, op: str, fields: dict[str, JSON]) -> JSON:
        if self.lost and op not in ("hello", "reset"):
            raise ImplementationFailed(op, self.lost, "restarted")
        process = self._ensure()
        if self.lost and op == "reset":
            self.lost = None
        return self._exchange({"op": op, **fields}, self.limits.timeout, process)

    def _exchange(self, message: dict[str, JSON], timeout: float, process: ChildProcess | None = None) -> JSON:
        process = process or self.process
        assert process is not None
        ident = self.next_id
        self.next_id += 1
        request = {"id": ident, **message}
        op = message["op"]
        label = f"{op} (request {ident})"
        if self.validator is not None:
            self.validator.request(request)
        try:
            line = wire.dumps(request) + b"\n"
        except (ValueError, TypeError, RecursionError) as exc:
            raise RunAborted("suite", f"loomcheck cannot write {label} as JSON: {exc}") from None
        # An answer may carry back what it was handed (a kernel may keep the hostile corpus's deep
        # input), so the bound on answers grows with the deepest request sent, as in process.
        self.deepest_sent = max(self.deepest_sent, wire.depth(request))
        limit = self._limit(timeout)
        end = time.monotonic() + limit
        if process.pending():
            self._stray(process, process.take(0), label)
        if self.transcript is not None:
            self.transcript.append((self.launches, "sent", line))
        try:
            written = process.send(line, limit)
        except (BrokenPipeError, OSError, ValueError):
            self._fault("crash", f"{label}: its stdin is closed ({process.exit_status()}){process.stderr_tail()}", label)
        item = process.take(end - time.monotonic()) if written else None
        if item is None:
            self._no_answer(process, label, limit, written)
        if isinstance(item, Fault):
            if item.reason == "crash":
                held = f"; {item.detail}" if item.detail == HELD else ""
                self._fault("crash", f"died during {label}: {process.exit_status()}{held}{process.stderr_tail()}",
                            label)
            self._fault(item.reason, item.detail, label)  # ImplementationFailed puts the label first
        if self.transcript is not None:
            self.transcript.append((self.launches, "received", item))
        response = self._answer(process, item, ident, label)
        if self.validator is not None:
            problem = self.validator.response(response, op)
            if problem:
                self._fault("invalid-message", problem, label)
        return self._result(response, op, label)

    def _limit(self, timeout: float) -> float:
        """Seconds one exchange may take: its timeout, within the run's deadline."""
        if self.deadline is None:
            return timeout
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RunAborted("deadline", "the run's deadline passed")
        return min(timeout, left)

    def _no_answer(self, process: ChildProcess, label: str, limit: float, written: bool) -> Any:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            process.kill()
            self.process = None
            raise RunAborted("deadline", f"the run's deadline passed while waiting for {label}")
        what = "no answer to" if written else "did not read"
        self._fault("hang", f"{what} {label} within {limit:g} s (--timeout)", label)

    def _stray(self, process: ChildProcess, item: bytes | Fault | None, label: str) -> Any:
        """Something came while nobody asked: a line is a flood, the end of stdout a crash."""
        if isinstance(item, Fault) and item.reason == "crash":
            self._fault("crash", f"exited before {label} was sent ({process.exit_status()}){process.stderr_tail()}",
                        label)
        self._fault("flood", f"wrote {_what(item)} before {label} was sent: nobody asked for it", label)

    def _answer(self, process: ChildProcess, line: bytes, ident: int, label: str) -> dict[str, JSON]:
        """The response to request `ident`. A line that answers nothing and is followed by
        more, unasked, is a flood (a program printing forever), not one wrong answer."""
        try:
            response = self._parse(line, label)
            if response.get("id") != ident:
                raise ImplementationFailed(label, f"answered {label} with id {response.get('id')!r}", "wrong-id")
            return response
        except ImplementationFailed as wrong:
            if wrong.reason in ("garbage", "wrong-id"):
                follow = process.take(FOLLOW_SECONDS)
                if isinstance(follow, bytes) or (isinstance(follow, Fault) and follow.reason != "crash"):
                    self._fault("flood", f"answered {label} with more than one line, lines nobody asked for: "
                                         f"{line[:80]!r}, then {_what(follow)}", label)
            self._fault(wrong.reason or "garbage", wrong.detail, label)

    def _parse(self, line: bytes, label: str) -> dict[str, JSON]:
        """Bounded data first (docs/protocol.md): strict UTF-8, JSON, its depth and size."""
        try:
            value = wire.loads_answer(line, max(self.limits.max_depth, self.deepest_sent + ENVELOPE),
                                      self.limits.max_values)
        except wire.TooDeep as exc:
            raise ImplementationFailed(label, f"{exc} (the bound on answers)", "invalid-message") from None
        except ValueError as exc:
            raise ImplementationFailed(label, f"answered {label} with a line that is not JSON ({exc}): "
                                              f"{line[:120]!r}", "garbage") from None
        if not isinstance(value, dict):
            raise ImplementationFailed(label, f"answered {label} with {_short(value)}, not a JSON object", "garbage")
        if ("result" in value) == ("error" in value):
            raise ImplementationFailed(label, f"answered {label} with neither or both of result and error: "
                                              f"{_short(value)}", "garbage")
        return value

    def _result(self, response: dict[str, JSON], op: str, label: str) -> JSON:
        if "result" in response:
            result = response["result"]
            if op in OUTCOMES:
                crashed = result.get("crashed") if isinstance(result, dict) else None
                return Outcome.accepted(crashed=crashed is True)
            return result
        error = response["error"]
        if not isinstance(error, dict):
            self._fault("garbage", f"answered {label} with an error that is not an object: {_short(error)}", label)
        kind = error.get("kind")
        message = str(error.get("message") or "")
        if kind == "refused" and op in OUTCOMES:
            if error.get("definite") is not True:
                raise ImplementationFailed(label, f"refused, yet says the operation may have happened "
                                                  f"(definite: {error.get('definite')!r}): a refusal appends nothing")
            return Outcome.refused(str(error.get("error") or ""), str(error.get("reason") or ""), message)
        if kind == "unsupported":
            raise NotImplementedError(message or f"{op} is not supported")
        happened = "it definitely did not happen" if error.get("definite") is True else "it may have happened"
        raise ImplementationFailed(label, f"failed ({happened}): {message or _short(error)}")

    def _fault(self, reason: str, detail: str, label: str = "") -> Any:
        """Kill the process and fail the call; the next call starts another one."""
        if self.process is not None:
            self.process.kill()
            self.process = None
        self.lost = (f"the process was restarted after a fault ({reason}); what it held is gone until the next "
                     f"reset")
        raise ImplementationFailed(label or "protocol", detail, reason)

    # -- the driver interface ------------------------------------------------------------
    def hello(self) -> dict[str, JSON]:
        self._ensure()
        assert self.first_hello is not None
        hello = dict(self.first_hello)
        hello.pop("protocol", None)
        return hello

    def reset(self) -> None:
        self.deployment = Deployment()
        self._request("reset", {})

    def define_flow(self, flow_id: str, program: dict[str, JSON]) -> Outcome:
        outcome = self._request("define", {"flow": flow_id, "program": program})
        if outcome.ok:
            self.deployment.flows[flow_id] = program
        return outcome

    def start(self, execution_id: str, flow_id: str, input: JSON) -> Outcome:
        return self._request("start", {"execution": execution_id, "flow": flow_id, "input": input})

    def resume(self, execution_id: str, event_type: str, payload: JSON, options: dict[str, JSON] | None = None) -> Outcome:
        fields = {"execution": execution_id, "type": event_type, "payload": payload}
        return self._request("resume", {**fields, "options": options} if options else fields)

    def resume_as(self, execution_id: str, flow_id: str, event_type: str, payload: JSON,
                  options: dict[str, JSON] | None = None) -> Outcome:
        fields = {"execution": execution_id, "flow": flow_id, "type": event_type, "payload": payload}
        return self._request("resume-as", {**fields, "options": options} if options else fields)

    def configure(self, config: dict[str, JSON]) -> Outcome:
        outcome = self._request("configure", {"config": config})
        if outcome.ok:
            self.deployment.config = config
        return outcome

    def advance_clock(self, ms: int) -> list[str]:
        return self._request("advance-clock", {"ms": ms})

    def parked_at_sequence(self, execution_id: str) -> int | None:
        return self._request("parked-at-sequence", {"execution": execution_id})

    def sign(self, claim: dict[str, JSON]) -> dict[str, JSON]:
        return self._request("sign", {"claim": claim})

    def recover(self, execution_id: str) -> Outcome:
        return self._request("recover", {"execution": execution_id})

    def recover_abandoned(self) -> list[str]:
        return self._request("recover-abandoned", {})

    def restart(self) -> None:
        self._request("restart", {})

    def effects(self, execution_id: str) -> list[dict[str, JSON]]:
        return self._request("effects", {"execution": execution_id})

    def load(self, execution_id: str, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> Outcome:
        return self._request("load", {"execution": execution_id, "events": events, "snapshot": snapshot})

    def warnings(self) -> list[dict[str, JSON]]:
        return self._request("warnings", {})

    def append_events(self, execution_id: str, events: list[dict[str, JSON]]) -> Outcome:
        return self._request("append-events", {"execution": execution_id, "events": events})

    def erase(self, execution_id: str) -> None:
        self._request("erase", {"execution": execution_id})

    def truncate_prefix(self, execution_id: str, upto: int) -> Outcome:
        return self._request("truncate-prefix", {"execution": execution_id, "upto": upto})

    def arm_kill(self, after_appends: int) -> None:
        self._request("arm-kill", {"afterAppends": after_appends})

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        return self._request("read-log", {"execution": execution_id})

    def read_state(self, execution_id: str) -> dict[str, JSON]:
        return self._request("read-state", {"execution": execution_id})

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        return self._request("fold", {"events": events, "snapshot": snapshot})


def _hello_problem(hello: JSON) -> str | None:
    if not isinstance(hello, dict):
        return f"{_short(hello)} is not an object"
    if hello.get("protocol") != PROTOCOL:
        return f"speaks {hello.get('protocol')!r}, not {PROTOCOL}"
    for key in ("name", "version", "eventSchema"):
        if not isinstance(hello.get(key), str) or not hello.get(key):
            return f"{key} is missing or not a string: {_short(hello)}"
    features = hello.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        return f"features is not a list of names: {_short(features)}"
    return None


def _what(item: bytes | Fault | None) -> str:
    if item is None:
        return "nothing"
    return item.detail if isinstance(item, Fault) else repr(item[:80])


def _short(value: Any) -> str:
    from loomcheck.contract.jsonvalues import show

    return show(value, 120)


def _validator() -> Any:
    from loomcheck.protocol.validation import ProtocolValidator

    return ProtocolValidator()
