"""The fold before EVENT_SCHEMA 1.15.0: EXECUTION_MIGRATED moves the flow but
ignores migratedInput, so the recorded outcome never reaches _input (ADR 0056 D2)."""

from __future__ import annotations

import copy

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import HANDLERS, State, _migrated


def _migrated_ignoring_input(state: State, payload) -> None:
    kept = copy.deepcopy(state.variables.get("_input"))
    _migrated(state, payload)
    state.variables["_input"] = kept


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", handlers={**HANDLERS, "EXECUTION_MIGRATED": _migrated_ignoring_input})
