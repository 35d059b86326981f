"""The code pin applied to resumeAs too: an execution whose flow was redeployed
is refused code-mismatch by the very operation that migrates it onto the new
code, so it can never leave the old version (a plain resume is still pinned)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class PinnedResumeAsRuntime(Runtime):
    def _resume_as(self, execution_id, state, events, target_flow, event_type, payload, options):
        self.check_code(state)
        return super()._resume_as(execution_id, state, events, target_flow, event_type, payload, options)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=PinnedResumeAsRuntime)
