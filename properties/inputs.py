"""ADR 0077 (Context, after ADR 0051 D7): with validation on, start() parses
its input before appending and records the parsed value."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.script import Start
from loomcheck.contract.session import Step, Trace
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.parsing import Invalid, Parsed, parse


def _parsed_input(step: Step, trace: Trace) -> Parsed | Invalid | None:
    """The parse of a start's input, when its flow validates input (None otherwise)."""
    if not isinstance(step.op, Start) or step.log_before:
        return None
    flow = trace.flows.get(step.op.flow)
    if flow is None or not flow.validateInput or flow.inputSchema is None:
        return None
    return parse(flow.inputSchema, step.op.input)


@predicate("start.invalid-input-refused")
def invalid_input_is_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    parsed = _parsed_input(step, trace)
    if isinstance(parsed, Invalid) and step.outcome.reason != "invalid-input":
        yield Violation("start.invalid-input-refused",
                        f"input {show(step.op.input)} fails the flow's inputSchema at {parsed.field} ({parsed.message}) "
                        f"but start got {step.outcome.short()}, not refused invalid-input.",
                        tuple(e.get("seq") for e in step.log_after[:1]), ("appended by the start, which should have been refused",),
                        "refused invalid-input before anything is appended")
    elif isinstance(parsed, Parsed) and not step.outcome.ok:
        yield Violation("start.invalid-input-refused",
                        f"input {show(step.op.input)} matches the flow's inputSchema but start was refused ({step.outcome.reason}).")


@predicate("start.input-recorded-parsed")
def input_is_recorded_parsed(step: Step, trace: Trace) -> Iterator[Violation]:
    parsed = _parsed_input(step, trace)
    if not isinstance(parsed, Parsed) or not step.outcome.ok:
        return
    first = step.log_after[0] if step.log_after else {}
    recorded = first.get("payload", {}).get("input") if isinstance(first.get("payload"), dict) else None
    if not json_equal(recorded, parsed.value):
        yield Violation("start.input-recorded-parsed",
                        f"#1 EXECUTION_STARTED recorded input {show(recorded)}, but the parsed value is {show(parsed.value)} "
                        f"(defaults applied).", (1,), ("the start's record of its input",),
                        "EXECUTION_STARTED records the PARSED input, defaults applied")
