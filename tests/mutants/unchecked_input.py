"""validateInput honoured for what it records but not for what it refuses: an
input that fails the flow's inputSchema is started and recorded as sent (a
matching one is still recorded parsed, defaults applied)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.spec.parsing import Invalid, Parsed


class UncheckedInputRuntime(Runtime):
    starting = False

    def start(self, execution_id, flow_id, input):
        self.starting = True
        try:
            return super().start(execution_id, flow_id, input)
        finally:
            self.starting = False

    def input_contract(self, program, value):
        parsed = Runtime.input_contract(program, value)
        return Parsed(value) if self.starting and isinstance(parsed, Invalid) else parsed


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=UncheckedInputRuntime)
