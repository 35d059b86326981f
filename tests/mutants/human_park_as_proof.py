"""A classifier that counts a human step's park as proof that earlier entries were
spent (ADR 0104 D2: "a human park proves nothing"), so a stray before one is
reported passed instead of at-risk."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.scanner import StrayScanner


class ProvingScanner(StrayScanner):
    def _suspended(self, condition, seq, kinds):
        super()._suspended(condition, seq, kinds)
        if self.park == "human":
            self.last_gate_park = seq


class ProvingRuntime(Runtime):
    def full_scan(self, execution_id, kinds):
        scanner = super().full_scan(execution_id, kinds)
        fresh = ProvingScanner(consumed=0)
        events = self.store.read(execution_id)
        if events and events[0].seq == 1:
            fresh.feed(events, kinds)
            return fresh
        return scanner


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=ProvingRuntime)
