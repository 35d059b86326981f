"""An operator override honoured without authentication (ADR 0104 D2: "It is
honoured only when the configured ResumeAuthenticator VERIFIES the event")."""

from __future__ import annotations

from loomcheck.reference.authenticator import Verdict
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class TrustingOverride(Runtime):
    def scan_legacy(self, execution_id, flow_id, options, grant, event_type, live=False):
        return super().scan_legacy(execution_id, flow_id, options, grant or Verdict.granted("anyone", "nothing"),
                                   event_type, live)

    @staticmethod
    def record_discard(append, discard, grant):
        Runtime.record_discard(append, discard, grant or Verdict.granted("anyone", "nothing"))


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=TrustingOverride)
