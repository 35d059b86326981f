"""The user's SIGINT and SIGTERM, handled by flag, and raised into a driver call only
(`DRIVER_CALL`). Standard library only, cheap to import. Why: docs/contract.md, "The user's
signals"."""

from __future__ import annotations

import signal
import sys
import threading

TYPE_CHECKING = False  # typing is not imported: this module is the first thing `python -m loomcheck` loads
if TYPE_CHECKING:
    from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Raised by the handler into a driver call only (see the module's text)."""


class _State:
    def __init__(self) -> None:
        self.signum: int | None = None        # the first signal received while the handlers were ours
        self.previous: dict[int, Any] = {}    # the handlers ours replaced, while ours are installed
        self.calls = 0                        # driver calls the main thread is inside
        self.unraisable: Any = None           # sys.unraisablehook before ours


_state = _State()


def _on_signal(signum: int, frame: object) -> None:
    if _state.signum is None:
        _state.signum = signum
    if _state.calls > 0:
        raise Interrupted(signum)


def _unraisable(info: Any) -> None:
    """An Interrupted dropped where Python cannot raise (a gc callback, a __del__): the flag
    is set and will stop the run, so it is not printed as if something had gone wrong."""
    if isinstance(info.exc_value, Interrupted):
        return
    (_state.unraisable or sys.__unraisablehook__)(info)


def requested() -> int | None:
    """The signal that asked the run to stop, or None."""
    return _state.signum


def describe() -> str:
    signum = _state.signum
    return f"interrupted by {signal.Signals(signum).name}" if signum is not None else "not interrupted"


def clear() -> None:
    """Forget a signal already acted on (a later run in the same process starts afresh)."""
    _state.signum = None


def install() -> bool:
    """Our handlers for SIGINT and SIGTERM, if this is the main thread and they are not
    installed yet; whether this call installed them. An embedding caller on another thread
    keeps its own signal handling (Python only lets the main thread set handlers)."""
    if _state.previous or threading.current_thread() is not threading.main_thread():
        return False
    try:
        for signum in SIGNALS:
            _state.previous[signum] = signal.signal(signum, _on_signal)
    except (ValueError, OSError):  # an interpreter that does not let us: keep what it has
        restore()
        return False
    _state.unraisable, sys.unraisablehook = sys.unraisablehook, _unraisable
    _state.signum = None  # a signal before now was someone else's to handle
    return True


def restore() -> None:
    """The handlers ours replaced, back in place."""
    for signum, previous in _state.previous.items():
        try:
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        except (ValueError, OSError):  # pragma: no cover - installed from this thread, restorable from it
            pass
    _state.previous = {}
    if _state.unraisable is not None:
        sys.unraisablehook, _state.unraisable = _state.unraisable, None


class handled:  # noqa: N801 - used as `with interrupts.handled():`
    """Signals handled by flag for the duration; nested uses share the outermost's handlers."""

    def __enter__(self) -> None:
        self.installed = install()

    def __exit__(self, *exc: object) -> None:
        if self.installed:
            restore()


class _DriverCall:
    """`with DRIVER_CALL:` around a call into the implementation (contract/session.py)."""

    __slots__ = ()

    def __enter__(self) -> None:
        if threading.get_ident() == _MAIN:
            _state.calls += 1

    def __exit__(self, *exc: object) -> None:
        if threading.get_ident() == _MAIN:
            _state.calls -= 1
            if _state.previous:
                _reassert()


def _reassert() -> None:
    """Ours back, should the call have installed its own (a kernel's library may, on start):
    while a run lasts, its signals are the run's."""
    for signum in SIGNALS:
        if signal.getsignal(signum) is not _on_signal:
            signal.signal(signum, _on_signal)


_MAIN = threading.main_thread().ident
DRIVER_CALL = _DriverCall()
