"""The ingress gate forgets the kernel namespace (#304): a caller's kernel event
type is judged like any gate name."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.runtime import Runtime


class OpenRuntime(Runtime):
    def check_resumable(self, state, event_type):
        parked_on = state.parked_on
        if parked_on is None:
            raise ResumeRefusedError("not-suspended", f"execution is {state.status}")
        if event_type != parked_on:
            raise ResumeRefusedError("gate-mismatch", f"parked on {parked_on!r}")


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=OpenRuntime)
