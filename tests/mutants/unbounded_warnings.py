"""A warning memory that grows without bound (ADR 0104 D2: a FIFO of 4096), so an
execution warned about once is never warned about again by a long-lived runtime."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.legacy import WarnMemory
from loomcheck.reference.runtime import Runtime


class HoardingRuntime(Runtime):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.warned = WarnMemory(limit=10**12)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=HoardingRuntime)
