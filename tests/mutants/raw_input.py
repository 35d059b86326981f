"""Input validation that checks but records the raw input, not the parsed one:
the schema's defaults are lost from the durable log (ADR 0077: the PARSED value
is what runs and is recorded)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.spec import parsing


class RawInputRuntime(Runtime):
    def start(self, execution_id, flow_id, input):
        original = parsing.parse

        def parse_keeping_raw(schema, value):
            result = original(schema, value)
            return parsing.Parsed(value) if isinstance(result, parsing.Parsed) else result

        from loomcheck.reference import runtime as runtime_module

        runtime_module.parse = parse_keeping_raw
        try:
            return super().start(execution_id, flow_id, input)
        finally:
            runtime_module.parse = original


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=RawInputRuntime)
