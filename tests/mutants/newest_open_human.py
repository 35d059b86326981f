"""The first version of ADR 0104 D2's attribution rule: every human park is
credited to the most recently started open human step, ignoring the kernel-set
condition.stepId. It refuses the valid 0104 log with two human steps in one parallel."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.scanner import NON_HUMAN, Ambiguity, StrayScanner


class NewestOpenScanner(StrayScanner):
    def _apply(self, event, kinds):
        step = event.payload.get("stepId") if isinstance(event.payload, dict) else None
        if event.type == "STEP_STARTED" and isinstance(step, str) and kinds(step) not in NON_HUMAN:
            self.__dict__.setdefault("open", []).append(step)
        if event.type == "STEP_COMPLETED" and step in self.__dict__.get("open", []):
            self.__dict__["open"].remove(step)
        if event.type == "EXECUTION_SUSPENDED" and self.__dict__.get("open"):
            newest = self.__dict__["open"][-1]
            self.status, self.park, self.park_step, self.park_attributed = "suspended", "human", newest, False
            if newest in self.answered:
                self.found.append(Ambiguity(newest, "reparked-after-answer", event.seq))
            self.previous_type, self.previous_step = event.type, None
            return
        super()._apply(event, kinds)


class NewestOpenRuntime(Runtime):
    def full_scan(self, execution_id, kinds):
        events = self.store.read(execution_id)
        if events and events[0].seq == 1:
            scanner = NewestOpenScanner()
            scanner.feed(events, kinds)
            return scanner
        return super().full_scan(execution_id, kinds)

    def scanned(self, execution_id, program, live, fresh):
        return super().scanned(execution_id, program, live, fresh=True)


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=NewestOpenRuntime)
