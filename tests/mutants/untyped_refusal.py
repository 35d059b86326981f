"""A refusal with a reason nobody catalogued: a wrong gate is refused as
"wrong-gate" instead of "gate-mismatch"."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.runtime import Runtime


class RenamingRuntime(Runtime):
    def check_resumable(self, state, event_type):
        try:
            super().check_resumable(state, event_type)
        except ResumeRefusedError as refused:
            if refused.reason == "gate-mismatch":
                raise ResumeRefusedError("wrong-gate", refused.message) from None
            raise


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=RenamingRuntime)
