"""Warns about strays but never refuses an ambiguous human step (ADR 0104 D2:
ambiguous-legacy-answers), so the step may take a stray as its approval."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.scanner import Verdict


class LenientRuntime(Runtime):
    def scanned(self, execution_id, program, live, fresh):
        verdict = super().scanned(execution_id, program, live, fresh)
        return Verdict(verdict.classified, ())


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=LenientRuntime)
