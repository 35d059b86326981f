"""The authenticator verifies the approval, but nothing records who approved: no
APPROVAL_GRANTED {actor, verifiedBy} evidence (ADR 0117 Context, gap 2)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class SilentRuntime(Runtime):
    @staticmethod
    def record_grant(append, grant):
        return None


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=SilentRuntime)
