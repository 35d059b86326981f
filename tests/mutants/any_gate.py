"""Any event name answers the parked gate (the ingress gate before #305)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.runtime import Runtime


class UncheckedGateRuntime(Runtime):
    def check_resumable(self, state, event_type):
        try:
            super().check_resumable(state, event_type)
        except ResumeRefusedError as refused:
            if refused.reason != "gate-mismatch":
                raise


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=UncheckedGateRuntime)
