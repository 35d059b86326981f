"""Hostile in-process drivers: tests/small_kernel.py with one method misbehaving in a way
a Python object can and a process on a pipe cannot (any exception class, a value that
contains itself, a mutation of what it was handed). The harness must turn each into
the implementation's finding, never a false verdict, a traceback or a lost report."""

from __future__ import annotations

from typing import Any, Callable

from small_kernel import SmallKernel

JSON = Any


class Escape(BaseException):
    """Not an Exception: what `except Exception` lets through."""


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")

    def __repr__(self) -> str:
        raise ValueError("no repr either")


def raising(method: str, make: Callable[[], BaseException]) -> Callable[[], SmallKernel]:
    """A factory of small kernels whose `method` raises `make()` (after doing its work)."""
    def broken(self: SmallKernel, *args: Any) -> Any:
        getattr(SmallKernel, method)(self, *args)
        raise make()

    kernel = type(f"Raises{type(make()).__name__}In{method.title()}", (SmallKernel,), {method: broken})
    return kernel


def factory_exits() -> SmallKernel:
    raise SystemExit(0)


start_exits = raising("start", lambda: SystemExit(0))
read_state_generator_exit = raising("read_state", GeneratorExit)
resume_escapes = raising("resume", lambda: Escape("not an Exception"))
define_interrupts = raising("define_flow", KeyboardInterrupt)
start_unprintable = raising("start", UnprintableError)
close_exits = raising("close", lambda: SystemExit(3))


class HelloEscapes(SmallKernel):
    def hello(self) -> Any:
        raise Escape("hello, and goodbye")


class MutatingFold(SmallKernel):
    """A correct fold that empties (and scribbles on) the list it was handed: the harness's
    own record of the log must not change."""

    def fold(self, events: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> dict[str, JSON]:
        state = super().fold(events, snapshot)
        for event in events:
            if isinstance(event.get("payload"), dict):
                event["payload"]["scribbled"] = True
        events.clear()
        events.append({"seq": 99, "type": "EXECUTION_FAILED", "payload": {"error": "not really"}})
        return state


class SelfReferentialLog(SmallKernel):
    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        log = super().read_log(execution_id)
        if log:
            log[0]["payload"] = {"me": log[0]}  # the event contains itself
        return log


class DeepState(SmallKernel):
    def read_state(self, execution_id: str) -> dict[str, JSON]:
        state = super().read_state(execution_id)
        deep: JSON = 0
        for _ in range(2000):
            deep = [deep]
        state["variables"]["deep"] = deep
        return state


class TakesTheSignals(SmallKernel):
    """Installs its own SIGTERM handler on every reset (as a library may when it starts), and
    notes on each read whether it is still the one installed."""

    seen: list[bool] = []

    def reset(self) -> None:
        import signal

        super().reset()
        signal.signal(signal.SIGTERM, _its_own)

    def read_log(self, execution_id: str) -> list[dict[str, JSON]]:
        import signal

        TakesTheSignals.seen.append(signal.getsignal(signal.SIGTERM) is _its_own)
        return super().read_log(execution_id)


def _its_own(signum: int, frame: object) -> None:  # pragma: no cover - never delivered
    pass


def takes_the_signals() -> SmallKernel:
    return TakesTheSignals()


def hello_escapes() -> SmallKernel:
    return HelloEscapes()


def mutating_fold() -> SmallKernel:
    return MutatingFold()


def self_referential_log() -> SmallKernel:
    return SelfReferentialLog()


def deep_state() -> SmallKernel:
    return DeepState()
