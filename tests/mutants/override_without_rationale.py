"""Records the operator override without who approved it (ADR 0104 D2: rationale:
{approval: {actor, verifiedBy}})."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class BareOverride(Runtime):
    @staticmethod
    def record_discard(append, discard, grant):
        if discard is not None:
            append("DECISION_RECORDED", {"decisionId": discard.decision_id, "choice": discard.count,
                                         "source": "operator"})


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=BareOverride)
