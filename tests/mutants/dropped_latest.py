"""A fold that no longer keeps `_resumePayload`, the single latest answer ADR
0057 keeps for compatibility. Its state and its own fold agree with each other;
only a comparison with the reference shows the difference."""

from __future__ import annotations

import copy

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import HANDLERS, State, answers_no_suspend_point


def _resumed_without_latest(state: State, payload) -> None:
    status_only = answers_no_suspend_point(state, payload)
    state.status, state.suspended_on = "running", None
    if not status_only:
        state.variables.setdefault("_resumePayloads", []).append(copy.deepcopy(payload))


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", handlers={**HANDLERS, "EXECUTION_RESUMED": _resumed_without_latest})
