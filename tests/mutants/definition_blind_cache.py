"""A scan cache that keeps its scanner across redeployed definitions, resolving
step kinds only as each new event is fed: the kernel ADR 0104 R1a residual 3
describes (a tool registered between resumes)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class FeedTimeKindsRuntime(Runtime):
    def scanned(self, execution_id, program, live, fresh):
        cached = self.scans.entries.get(execution_id)
        if cached is not None:
            cached.definition = program  # the definition is not part of the cache key
        return super().scanned(execution_id, program, live, fresh)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=FeedTimeKindsRuntime)
