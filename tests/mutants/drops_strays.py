"""The alternative ADR 0104 rejects: the fold skips every entry recorded while the
execution is not parked at a gate, which re-parks legacy executions at gates
their logs show them past, or shifts every later answer one gate early."""

from __future__ import annotations

from types import MappingProxyType

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import HANDLERS, IN_DOUBT_GATE, _resumed


def _resumed_if_parked(state, payload):
    if state.status != "suspended" or state.parked_on == IN_DOUBT_GATE:
        state.status, state.suspended_on = "running", None
        return
    _resumed(state, payload)


HANDLERS_DROPPING = MappingProxyType({**HANDLERS, "EXECUTION_RESUMED": _resumed_if_parked})


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", handlers=HANDLERS_DROPPING)
