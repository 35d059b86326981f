"""Rehydration re-parses recorded answers against the flow's resumeSchemas: an
imported log is rewritten (defaults added, keys dropped), so a transform resume()
already applied runs twice (ADR 0077 D5: restoreFromState does not validate)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.parsing import Invalid, parse


class ValidatingDriver(ReferenceDriver):
    def load(self, execution_id, events, snapshot):
        started = next((e for e in events if e.get("type") == "EXECUTION_STARTED"), None)
        program = self.runtime.flows.get(((started or {}).get("payload") or {}).get("flowId", ""))
        if program is not None:
            events = [self._parsed(program, e) for e in events]
        return super().load(execution_id, events, snapshot)

    @staticmethod
    def _parsed(program, event):
        schema = program.resume_schema(event.get("type"))
        if schema is None:
            return event
        parsed = parse(schema, event.get("payload"))
        return event if isinstance(parsed, Invalid) else {**event, "payload": parsed.value}


def make() -> ReferenceDriver:
    return ValidatingDriver(store="memory")
