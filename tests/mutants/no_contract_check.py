"""resumeAs onto a flow that validates its input, without checking the input it
will run with: a contract-evolving deploy hands the new runner old-shaped input
instead of refusing explicitly (ADR 0056, acceptance criterion 7)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.transforms import apply_transform


class UncheckedContractRuntime(Runtime):
    def migrate_state(self, state, target_flow, transform):
        current = state.variables.get("_input")
        return current if transform is None else apply_transform(transform, current,
                                                                 self.flows[target_flow].inputSchema)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=UncheckedContractRuntime)
