"""A migration that records the old version as its toVersion: the execution
runs the new code, but its log still pins it to the code it started on."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class StalePinRuntime(Runtime):
    def migration_record(self, state, target_flow, transform, migrated):
        record = super().migration_record(state, target_flow, transform, migrated)
        if state.version is not None:
            record["toVersion"] = state.version
        return record


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=StalePinRuntime)
