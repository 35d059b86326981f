"""Scans and refuses, but never tells the operator (ADR 0104 D2: the warning goes
through onWarn)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class SilentRuntime(Runtime):
    def warn(self, execution_id, verdict):
        return None


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=SilentRuntime)
