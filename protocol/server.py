"""Serving a Python driver over the driver protocol (docs/protocol.md):
`loomcheck serve` puts the reference kernel (or any `--impl python:...`) on
stdin/stdout, so the stdio transport is tested against a known kernel, and a
Python kernel can be run in a process of its own (isolated, killable).

One request per line in, one response per line out; nothing else on stdout."""

from __future__ import annotations

import sys
from typing import IO, Any, Callable, TextIO

from loomcheck.contract.driver import JSON, Hello, Outcome
from loomcheck.protocol.messages import FEATURE_OF, FIELDS, OUTCOMES, PROTOCOL
from loomcheck.protocol import wire

# op -> how the driver is called with the request's fields.
CALLS: dict[str, Callable[[Any, dict[str, JSON]], Any]] = {
    "reset": lambda d, m: d.reset(),
    "define": lambda d, m: d.define_flow(m["flow"], m["program"]),
    "start": lambda d, m: d.start(m["execution"], m["flow"], m.get("input")),
    "resume": lambda d, m: (d.resume(m["execution"], m["type"], m.get("payload"), m["options"]) if m.get("options")
                            else d.resume(m["execution"], m["type"], m.get("payload"))),
    "resume-as": lambda d, m: (d.resume_as(m["execution"], m["flow"], m["type"], m.get("payload"), m["options"])
                               if m.get("options") else d.resume_as(m["execution"], m["flow"], m["type"], m.get("payload"))),
    "read-log": lambda d, m: d.read_log(m["execution"]),
    "read-state": lambda d, m: d.read_state(m["execution"]),
    "fold": lambda d, m: d.fold(m["events"], m.get("snapshot")),
    "load": lambda d, m: d.load(m["execution"], m["events"], m.get("snapshot")),
    "recover": lambda d, m: d.recover(m["execution"]),
    "recover-abandoned": lambda d, m: d.recover_abandoned(),
    "restart": lambda d, m: d.restart(),
    "configure": lambda d, m: d.configure(m["config"]),
    "parked-at-sequence": lambda d, m: d.parked_at_sequence(m["execution"]),
    "sign": lambda d, m: d.sign(m["claim"]),
    "advance-clock": lambda d, m: d.advance_clock(m["ms"]),
    "effects": lambda d, m: d.effects(m["execution"]),
    "warnings": lambda d, m: d.warnings(),
    "append-events": lambda d, m: d.append_events(m["execution"], m["events"]),
    "erase": lambda d, m: d.erase(m["execution"]),
    "truncate-prefix": lambda d, m: d.truncate_prefix(m["execution"], m["upto"]),
    "arm-kill": lambda d, m: d.arm_kill(m["afterAppends"]),
}


def handle(driver: Any, features: frozenset[str], message: JSON) -> dict[str, JSON]:
    """One request -> one response. Never raises: what the driver raises is data."""
    ident = message.get("id") if isinstance(message, dict) else None
    if not isinstance(message, dict) or type(ident) is not int:
        return _error(-1, "failed", True, "a request must be a JSON object with an integer id")
    op = message.get("op")
    try:
        if op == "hello":
            if message.get("protocol") != PROTOCOL:
                return _error(ident, "failed", True, f"this server speaks {PROTOCOL}, not {message.get('protocol')!r}")
            hello = driver.hello()
            hello = hello.model_dump() if isinstance(hello, Hello) else dict(hello)
            return {"id": ident, "result": {"protocol": PROTOCOL, **hello}}
        if op == "shutdown":
            return {"id": ident, "result": None}
        if op not in CALLS:
            return _error(ident, "failed", True, f"unknown op {op!r}; known: {', '.join(FIELDS)}")
        feature = FEATURE_OF.get(op)
        if feature is not None and feature not in features:
            return _error(ident, "unsupported", True, f"feature {feature} is not declared")
        missing = [f for f in FIELDS[op] if f not in message and f not in _OPTIONAL]
        if missing:
            return _error(ident, "failed", True, f"{op} needs {', '.join(missing)}")
        result = CALLS[op](driver, message)
    except NotImplementedError as exc:
        return _error(ident, "unsupported", True, str(exc) or f"{op} is not implemented")
    except Exception as exc:  # noqa: BLE001 - the driver's failure is reported, the server goes on
        return _error(ident, "failed", False, f"{type(exc).__name__}: {exc}")
    if op in OUTCOMES:
        return _outcome(ident, result)
    return {"id": ident, "result": result}


_OPTIONAL = {"input", "payload", "options", "snapshot"}


def _outcome(ident: int, outcome: Any) -> dict[str, JSON]:
    if isinstance(outcome, dict):
        outcome = Outcome(ok=bool(outcome.get("ok")), error=outcome.get("error"), reason=outcome.get("reason"),
                          message=str(outcome.get("message") or ""), crashed=bool(outcome.get("crashed")))
    if not isinstance(outcome, Outcome):
        return _error(ident, "failed", False, f"the driver returned {outcome!r}, not an Outcome")
    if outcome.ok:
        return {"id": ident, "result": {"crashed": outcome.crashed}}
    return {"id": ident, "error": {"kind": "refused", "definite": True, "error": outcome.error or "",
                                   "reason": outcome.reason or "", "message": outcome.message}}


def _error(ident: int, kind: str, definite: bool, message: str) -> dict[str, JSON]:
    return {"id": ident, "error": {"kind": kind, "definite": definite, "message": message}}


def serve(driver: Any, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None, log: TextIO = sys.stderr) -> int:
    """Answer requests until stdin closes or a shutdown arrives. The wire is bytes: UTF-8
    in, ASCII out, whatever the locale says."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    hello = driver.hello()
    declared = hello.features if isinstance(hello, Hello) else hello.get("features", [])
    features = frozenset(declared)
    for raw in stdin:
        if not raw.strip():
            continue
        message: JSON = None
        try:
            message = wire.loads(raw.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError included
            print(f"loomcheck serve: not JSON ({exc}): {raw[:200]!r}", file=log, flush=True)
            response = _error(-1, "failed", True, f"not JSON: {exc}")
        except RecursionError:
            response = _error(-1, "failed", True, "nested too deep for this server")
        else:
            response = handle(driver, features, message)
        try:
            text = wire.dumps(response)
        except (ValueError, TypeError, RecursionError) as exc:
            text = wire.dumps(_error(response.get("id", -1), "failed", False, f"the result is not JSON: {exc}"))
        stdout.write(text + b"\n")
        stdout.flush()
        if isinstance(message, dict) and message.get("op") == "shutdown":
            break
    return 0
