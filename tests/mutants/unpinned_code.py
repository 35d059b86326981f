"""A runtime that records code versions but never checks them: an execution
started on v1 is resumed on whatever is deployed now (K11 hash pinning; ADR
0056: resumeAs onto the new version is the exit, never a plain resume)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class UnpinnedRuntime(Runtime):
    def check_code(self, state) -> None:
        return None


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=UnpinnedRuntime)
