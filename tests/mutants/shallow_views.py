"""A kernel bound by its language's recursion limit: it serialises a view with a
recursive encoder, so a proposal nested 1000 levels deep is refused although
canonical JSON digests up to 1024 (ADR 0117 D1: only deeper is refused)."""

from __future__ import annotations

from loomcheck.contract.driver import Outcome
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.canonical import depth


class ShallowDriver(ReferenceDriver):
    def define_flow(self, flow_id, program):
        for op in program.get("body") or [] if isinstance(program, dict) else []:
            if isinstance(op, dict) and "view" in op and depth(op["view"]) > 900:
                return Outcome.refused("FlowDefinitionError", "invalid-program", "maximum recursion depth exceeded")
        return super().define_flow(flow_id, program)


def make() -> ReferenceDriver:
    return ShallowDriver(store="memory")
