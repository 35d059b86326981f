"""The fold before EVENT_SCHEMA 1.20.0: every EXECUTION_RESUMED appends its
payload, so a null that answered no suspend point becomes an entry (ADR 0104 D3)."""

from __future__ import annotations

import copy

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import HANDLERS, State


def _resumed_always(state: State, payload) -> None:
    state.status, state.suspended_on = "running", None
    state.variables.setdefault("_resumePayloads", []).append(copy.deepcopy(payload))
    state.variables["_resumePayload"] = copy.deepcopy(payload)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", handlers={**HANDLERS, "EXECUTION_RESUMED": _resumed_always})
