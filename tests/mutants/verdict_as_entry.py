"""Pre-0104 in-doubt verdicts: recorded as EXECUTION_RESUMED(verdict), an entry
the flow's next gate consumes as its approval."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class EntryVerdicts(Runtime):
    def record_answer(self, append, state, answer):
        append("EXECUTION_RESUMED", answer)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=EntryVerdicts)
