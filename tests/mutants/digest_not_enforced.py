"""The gate records its viewDigest, but the ingress gate never compares the echo:
a bare {approved: true} approves a proposal nobody was shown (ADR 0117 D1, the
time-of-check/time-of-use gap the ADR closes)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.runtime import Runtime


class UncheckedDigestRuntime(Runtime):
    def check_binding(self, state, event_type, answer, options):
        try:
            super().check_binding(state, event_type, answer, options)
        except ResumeRefusedError as refused:
            if refused.reason != "view-digest-mismatch":
                raise


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=UncheckedDigestRuntime)
