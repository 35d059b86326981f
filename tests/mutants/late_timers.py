"""The timer service compares with `<` where the ADR's wake is due AT wakeAt: a
park due exactly now is left parked until the clock moves again (ADR 0117 D5)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class LateRuntime(Runtime):
    def fire_timers(self):
        self.clock.now_ms -= 1  # wake only what is strictly overdue
        try:
            return super().fire_timers()
        finally:
            self.clock.now_ms += 1


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=LateRuntime)
