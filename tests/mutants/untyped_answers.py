"""resumeSchemas declared but never consulted: a malformed approval is recorded
and handed to the flow (the "as unknown as" cast ADR 0077 replaced)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class UntypedRuntime(Runtime):
    @staticmethod
    def parse_answer(program, event_type, answer):
        return answer


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=UntypedRuntime)
