"""A scanner that only looks for strays before a human step's first start, where D2's
second shape lives ("after the first start the step has its park; nothing else can
reach it"), so a stray written after the first start (a worker that died before the
park, then an old node's recovery) is never classified: the step takes it as its
answer and the kernel warns nothing. ADR 0104 D2 classifies every stray: at-risk."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.scanner import NON_HUMAN, StrayScanner

from mutants._scanning import scanning_with


class BlindScanner(StrayScanner):
    def _step_started(self, step_id, seq, kinds):
        super()._step_started(step_id, seq, kinds)
        if kinds(step_id) not in NON_HUMAN:
            self.human_started = True

    def _resumed(self, payload, seq):
        before = len(self.strays)
        super()._resumed(payload, seq)
        if getattr(self, "human_started", False) and len(self.strays) > before:
            del self.strays[before:]  # not looked at: a human step has already started


def make() -> ReferenceDriver:
    return scanning_with(BlindScanner)
