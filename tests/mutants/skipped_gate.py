"""A gate with no recorded answer passes with null instead of parking: the
flow completes before anyone answered it."""

from __future__ import annotations

from loomcheck.reference.context import FlowContext, Passed
from loomcheck.reference.driver import ReferenceDriver


class SkippingContext(FlowContext):
    def suspend(self, on: str, meta=None, point=None, view_digest=None, timeout=None):
        answers = self.answers()
        index = self._consumed
        self._consumed += 1
        value = answers[index] if index < len(answers) else None
        self.passed.append(Passed(index if point is None else point, on, value))
        return value


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=SkippingContext)
