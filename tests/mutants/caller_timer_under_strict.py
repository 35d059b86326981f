"""A strict runtime that does not ask for the system grant: any caller's
TIMER_FIRED wakes a timed park early (ADR 0117 D5)."""

from __future__ import annotations

from dataclasses import replace

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class TrustingRuntime(Runtime):
    def check_binding(self, state, event_type, answer, options):
        return super().check_binding(state, event_type, answer, replace(options, system=True))


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=TrustingRuntime)
