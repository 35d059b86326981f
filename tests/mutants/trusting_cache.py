"""A scan cache with no invalidation but "anything flagged": it feeds whatever the
store returns after the sequence it scanned, so a log rewound shorter, or a prefix
retained past that sequence, goes unnoticed (ADR 0104 R1a)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.legacy import CachedScan, kinds_of
from loomcheck.reference.runtime import Runtime


class GapBlindRuntime(Runtime):
    def scanned(self, execution_id, program, live, fresh):
        cached = self.scans.take(execution_id)
        kinds = kinds_of(program)
        if cached is not None and not fresh:
            scanner = cached.scanner
            for event in self.store.read(execution_id, after=cached.seq):
                scanner._apply(event, kinds)   # no contiguity check, no "does the log still reach it"
                scanner.consumed = event.seq
        else:
            scanner = self.full_scan(execution_id, kinds)
        verdict = scanner.verdict(live)
        if verdict.clean and not fresh:
            self.scans.keep(execution_id, CachedScan(scanner, max(scanner.consumed, cached.seq if cached else 0),
                                                     program))
        return verdict


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=GapBlindRuntime)
