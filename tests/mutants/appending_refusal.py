"""A refusal that appends: a resume naming the wrong gate records its event
before the ingress gate refuses it (breaks refuse-before-append)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.runtime import Appender, Runtime


class AppendingRefusalRuntime(Runtime):
    def resume(self, execution_id: str, event_type: str, payload, options=None):
        state, _ = self._existing(execution_id)
        try:
            self.check_resumable(state, event_type)
        except ResumeRefusedError as refused:
            if refused.reason == "gate-mismatch":
                Appender(self.store, execution_id, state.sequence + 1)(event_type, payload)
            raise
        return super().resume(execution_id, event_type, payload, options)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=AppendingRefusalRuntime)
