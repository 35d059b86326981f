"""The park is taken to be the folded tip (state.sequence): with audit entries
trailing the park, the kernel binds approvals to a sequence no approver was given,
and it never notices that retention removed the park (ADR 0117 Round 2)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class TipRuntime(Runtime):
    def locate_park(self, execution_id, events):
        return self.state(execution_id).sequence


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=TipRuntime)
