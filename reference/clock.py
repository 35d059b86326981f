"""The runtime's clock, in integer milliseconds since the epoch. It belongs to
the deployment, not to a worker: a restart keeps it, and the harness moves it
(the driver's advance_clock), so timed parks and proof expiries are reproducible."""

from __future__ import annotations

from loomcheck.spec.names import CLOCK_START_MS as START_MS  # fixed by the driver spec: every kernel sees the same wakeAt values


class Clock:
    def __init__(self, start_ms: int = START_MS) -> None:
        self.now_ms = start_ms

    def now(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> int:
        if type(ms) is not int or ms < 0:
            raise ValueError(f"the clock only moves forward, by whole milliseconds, not {ms!r:.40}")
        self.now_ms += ms
        return self.now_ms
