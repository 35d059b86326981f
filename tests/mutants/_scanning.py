"""A reference runtime whose stray scan (ADR 0104 D2) uses another scanner class:
the seam for mutants of the legacy scan that differ in one rule of the walk."""

from __future__ import annotations

import itertools

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.scanner import Kinds, StrayScanner
from loomcheck.reference.stores.base import stream


def scanning_with(scanner_class: type[StrayScanner]) -> ReferenceDriver:
    class ScanningRuntime(Runtime):
        def full_scan(self, execution_id: str, kinds: Kinds) -> StrayScanner:
            events = stream(self.store, execution_id)
            head = next(events, None)
            first = head.seq if head is not None else self.store.next_seq(execution_id)
            snapshot = self.store.get_snapshot(execution_id) if first > 1 else None
            scanner = scanner_class.from_snapshot(snapshot[1], first - 1) if snapshot is not None \
                else scanner_class(consumed=first - 1)
            if head is not None:
                scanner.feed(itertools.chain((head,), events), kinds)
            return scanner

    return ReferenceDriver(store="memory", runtime_class=ScanningRuntime)
