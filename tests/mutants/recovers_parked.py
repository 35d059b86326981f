"""recoverAbandoned that re-drives everything not finished, parked executions
included (and recover of a parked execution is not refused)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.fold import TERMINAL
from loomcheck.reference.runtime import Appender, Runtime


class EagerRecovery(Runtime):
    def recover(self, execution_id):
        state, _ = self._existing(execution_id)
        if state.status == "suspended":
            Appender(self.store, execution_id, state.sequence + 1)("EXECUTION_RECOVERED", {})
            return self.drive(execution_id)
        return super().recover(execution_id)

    def recover_abandoned(self):
        recovered = []
        for execution_id in self.store.executions():
            if self.state(execution_id).status not in TERMINAL:
                self.recover(execution_id)
                recovered.append(execution_id)
        return recovered


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=EagerRecovery)
