"""Judges a resumeAs that re-opens a finished execution as finished (ADR 0104 D2:
"The re-open is judged as live"), so its unspent strays are called harmless."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class DeadReopen(Runtime):
    def scan_legacy(self, execution_id, flow_id, options, grant, event_type, live=False):
        return super().scan_legacy(execution_id, flow_id, options, grant, event_type, live=False)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=DeadReopen)
