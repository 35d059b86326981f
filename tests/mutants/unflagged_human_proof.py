"""A scanner that lets a human step's park prove spent every stray before it that did
not already make a step ambiguous ("that stray is the refusal's business; the others
were consumed by whatever parked after them"). ADR 0104 D2: "a human park proves
nothing", so a stray written after a human step first started, followed only by that
step's re-park, stays at-risk; this kernel calls it passed. The ambiguous shapes hide
it: there the stray made the step ambiguous, so this scanner leaves it at-risk."""

from __future__ import annotations

from dataclasses import replace

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.scanner import StrayScanner

from mutants._scanning import scanning_with


class UnflaggedProofScanner(StrayScanner):
    human_proof: int = 0  # the newest human park seen while nothing was ambiguous

    def _suspended(self, condition, seq, kinds):
        super()._suspended(condition, seq, kinds)
        if self.park == "human" and not self.found:
            self.human_proof = seq

    def verdict(self, live=False):
        found = super().verdict(live)
        classified = tuple(replace(c, verdict="passed") if c.seq and c.seq < self.human_proof
                           and c.verdict == "at-risk" else c for c in found.classified)
        return replace(found, classified=classified)


def make() -> ReferenceDriver:
    return scanning_with(UnflaggedProofScanner)
