"""A state cache that forgets to clear the parking condition on resume: the
kernel reports `suspendedOn` from its last park, although its own fold of the
same log says it is not parked."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver


class StaleStateDriver(ReferenceDriver):
    def read_state(self, execution_id):
        state = super().read_state(execution_id)
        for event in reversed(self.read_log(execution_id)):
            if event["type"] == "EXECUTION_SUSPENDED":
                state["suspendedOn"] = event["payload"].get("condition")
                break
        return state


def make() -> ReferenceDriver:
    return StaleStateDriver(store="memory")
