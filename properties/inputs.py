"""ADR 0077 (Context, after ADR 0051 D7): with validation on, start() parses
its input before appending and records the parsed value."""

from __future__ import annotations

from typing import Iterator

from loomcheck.harness.script import Start
from loomcheck.harness.session import Step, Trace
from loomcheck.properties.jsonvalues import json_equal, show
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.parsing import Invalid, parse


@predicate("start.input-validated")
def input_is_parsed_first(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Start) or step.log_before:
        return
    flow = trace.flows.get(step.op.flow)
    if flow is None or not flow.validateInput or flow.inputSchema is None:
        return
    parsed = parse(flow.inputSchema, step.op.input)
    if isinstance(parsed, Invalid):
        if step.outcome.reason != "invalid-input":
            yield Violation("start.input-validated",
                            f"input {show(step.op.input)} fails the flow's inputSchema at {parsed.field} ({parsed.message}) "
                            f"but start got {step.outcome.short()}, not refused invalid-input.",
                            tuple(e.get("seq") for e in step.log_after[:1]))
        return
    if not step.outcome.ok:
        yield Violation("start.input-validated",
                        f"input {show(step.op.input)} matches the flow's inputSchema but start was refused ({step.outcome.reason}).")
        return
    first = step.log_after[0] if step.log_after else {}
    recorded = first.get("payload", {}).get("input") if isinstance(first.get("payload"), dict) else None
    if not json_equal(recorded, parsed.value):
        yield Violation("start.input-validated",
                        f"#1 EXECUTION_STARTED recorded input {show(recorded)}, but the parsed value is {show(parsed.value)} "
                        f"(defaults applied).", (1,))
