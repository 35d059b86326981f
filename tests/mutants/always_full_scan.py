"""No scan cache: every operation scans the whole retained log. Correct, only
slower; on it the residuals R1a admits for a warm runtime do not show."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class FullScanRuntime(Runtime):
    def scanned(self, execution_id, program, live, fresh):
        return super().scanned(execution_id, program, live, fresh=True)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=FullScanRuntime)
