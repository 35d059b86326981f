"""A warm runtime that assumes a clean log stays clean (ADR 0104 R1a rejects it):
after one clean scan it never looks at the log again, so strays an old node of
the fleet appends later go unseen."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.legacy import CachedScan
from loomcheck.reference.runtime import Runtime


class TrustingRuntime(Runtime):
    def scanned(self, execution_id, program, live, fresh):
        cached = self.scans.take(execution_id)
        if cached is not None and not fresh:
            self.scans.keep(execution_id, cached)
            return cached.scanner.verdict(live)  # clean once, clean forever
        verdict = super().scanned(execution_id, program, live, fresh)
        return verdict


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=TrustingRuntime)
