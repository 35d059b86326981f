"""The driver boundary: an implementation is untrusted, so whatever it raises, whatever its
class, or returns in the wrong shape becomes an `ImplementationFailed` naming the call, never a
crash of the harness nor a stop of the run. Only the user's signal (contract/interrupts.py),
the run's deadline or the transport's budget stop a run (`RunAborted`)."""

from __future__ import annotations

import time
from typing import Any, Callable

from loomcheck.contract import interrupts
from loomcheck.contract.driver import Outcome
from loomcheck.contract.jsondata import NotJsonData, plain
from loomcheck.contract.shown import brief, shown_exception


class ImplementationFailed(Exception):
    """The implementation raised, or answered with something that is not data.
    `reason` names a fault of its process (hang, crash, garbage, wrong-id, oversized,
    flood, bad-hello, lying-hello, invalid-message: docs/protocol.md), None otherwise."""

    def __init__(self, operation: str, detail: str, reason: str | None = None) -> None:
        super().__init__(f"{operation}: {detail}")
        self.operation = operation
        self.detail = detail
        self.reason = reason


class RunAborted(BaseException):
    """The run must stop: its deadline passed or the implementation's budget of restarts
    is spent. A BaseException, like KeyboardInterrupt, so no check mistakes it for a
    finding about the example at hand; the runner writes a partial report."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason  # deadline, restarts, suite, or interrupted (the user's signal)
        self.detail = detail


def guarded(label: str, call: Callable[[], Any], shape: Callable[[Any], Any] | None = None,
            deadline: float | None = None) -> Any:
    """The driver boundary: `call()` (and `shape` of what it returns, which may meet the
    implementation's code too) with every exception turned into the implementation's
    finding, whatever its class: SystemExit, GeneratorExit and KeyboardInterrupt
    included. Only the user's signal, seen by flag (contract/interrupts.py), stops the run:
    before the call, and after one that failed, which may have failed of it (a stdio kernel
    in the same process group dies of the same Ctrl-C)."""
    checkpoint(deadline)
    try:
        with interrupts.DRIVER_CALL:
            raw = call()
            return raw if shape is None else shape(raw)
    except RunAborted:
        raise  # the transport's deadline, restart budget or own defect
    except ImplementationFailed:
        checkpoint()
        raise  # a transport's own finding, with its reason
    except NotJsonData as bad:
        checkpoint()
        raise ImplementationFailed(label, f"answered with what is not JSON data: {bad}", "invalid-message") from None
    except BaseException as exc:  # noqa: BLE001 - the implementation is untrusted, whatever it raises
        checkpoint()
        raise ImplementationFailed(label, f"raised {shown_exception(exc)}") from None


def checkpoint(deadline: float | None = None) -> None:
    """Stop the run here if the user asked (SIGINT, SIGTERM) or its deadline passed."""
    if interrupts.requested() is not None:
        raise RunAborted("interrupted", interrupts.describe())
    if deadline is not None and time.monotonic() > deadline:
        raise RunAborted("deadline", "the run's deadline passed")


def outcome_of(label: str, raw: Any) -> Outcome:
    """An Outcome built afresh from what the implementation returned (an Outcome, a subclass,
    or {ok, error, reason, message, crashed}), its fields checked: read inside the guard."""
    if isinstance(raw, Outcome):
        raw = {name: getattr(raw, name) for name in ("ok", "error", "reason", "message", "crashed")}
    elif not isinstance(raw, dict):
        raise ImplementationFailed(label, f"returned {brief(raw)}, not an Outcome")
    fields = plain(raw)
    ok, error, reason, message = fields.get("ok"), fields.get("error"), fields.get("reason"), fields.get("message")
    if not isinstance(ok, bool) or not all(x is None or isinstance(x, str) for x in (error, reason)):
        raise ImplementationFailed(label, f"returned {brief(fields)}, not an Outcome")
    text = message if isinstance(message, str) else "" if message is None else brief(message, 200)
    return Outcome(ok=ok, error=error, reason=reason, message=text, crashed=bool(fields.get("crashed")))
