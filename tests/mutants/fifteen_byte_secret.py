"""The minimum secret length is off by one: a 15-byte key is accepted (ADR 0117 D2:
secrets under 16 bytes are refused)."""

from __future__ import annotations

from loomcheck.reference import approvals
from loomcheck.reference.driver import ReferenceDriver


class LenientDriver(ReferenceDriver):
    def configure(self, config):
        saved = approvals.MIN_SECRET_BYTES
        approvals.MIN_SECRET_BYTES = 15
        try:
            return super().configure(config)
        finally:
            approvals.MIN_SECRET_BYTES = saved


def make() -> ReferenceDriver:
    return LenientDriver(store="memory")
