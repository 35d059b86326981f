"""A kernel that "tidies" every answer, declared or not, by dropping keys whose
value is null: a gate with no resumeSchemas entry no longer records its payload
as sent (ADR 0077 D2: absent a declaration, byte-identical)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class TidyingRuntime(Runtime):
    @staticmethod
    def parse_answer(program, event_type, answer):
        answer = Runtime.parse_answer(program, event_type, answer)
        if isinstance(answer, dict):
            return {k: v for k, v in answer.items() if v is not None}
        return answer


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=TidyingRuntime)
