"""The fold keeps the answers newest first (an `unshift` instead of a push)."""

from __future__ import annotations

import copy

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import HANDLERS, State, answers_no_suspend_point


def _resumed_newest_first(state: State, payload) -> None:
    status_only = answers_no_suspend_point(state, payload)
    state.status, state.suspended_on = "running", None
    if not status_only:
        state.variables.setdefault("_resumePayloads", []).insert(0, copy.deepcopy(payload))
        state.variables["_resumePayload"] = copy.deepcopy(payload)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", handlers={**HANDLERS, "EXECUTION_RESUMED": _resumed_newest_first})
