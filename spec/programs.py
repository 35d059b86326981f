"""The flow-program language, version 1: a small JSON-expressible language of
the flow-context calls, so that a kernel in any language can run the suite's
flows with a short generic runner (the reference's `reference/interpreter.py`
is the model).

A program is `{"language": "loomcheck-flow/1", "body": [op, ...]}`; ops run in
order, from the top, on every run of the flow:

    {"op": "step", "id": "a", "output": <json>}     idempotent step: runs once;
        records STEP_STARTED {stepId, attempt} then STEP_COMPLETED {stepId, output};
        every re-run replays the recorded output instead.
    {"op": "suspend", "on": "go1"}                    a gate: the i-th suspend point a
        run reaches takes the i-th recorded answer (ADR 0057); with none left it
        parks with EXECUTION_SUSPENDED {condition: {on}}.
    {"op": "observe"}                                 records what the last gate
        returned, as the application event `loomcheck.observed`
        {gate: <0-based index of that gate in this run>, on, value}.
    {"op": "emit", "type": "app.x", "payload": <json>}  an application event.
    {"op": "complete", "output": <json>}              completes the execution
        (EXECUTION_COMPLETED {output}); the end of the body completes with null.

Emits (and so observes) re-run on every run of the flow; an emit whose exact
fact (type and payload, compared as JSON, so key order does not matter) this
execution's log already holds is not appended again. So a gate that receives a different value on a re-run than on its first
run shows up in the log as a second, different observation.

Flow code may not emit a kernel event type: the emit fails the execution
(EXECUTION_FAILED) instead of appending (ADR 0104 D1, the emit guard).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

LANGUAGE = "loomcheck-flow/1"
OBSERVED_EVENT = "loomcheck.observed"


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepOp(_Op):
    op: Literal["step"]
    id: str = Field(min_length=1)
    output: JsonValue = None


class SuspendOp(_Op):
    op: Literal["suspend"]
    on: str


class ObserveOp(_Op):
    op: Literal["observe"]


class EmitOp(_Op):
    op: Literal["emit"]
    type: str = Field(min_length=1)
    payload: JsonValue = None


class CompleteOp(_Op):
    op: Literal["complete"]
    output: JsonValue = None


Op = Annotated[Union[StepOp, SuspendOp, ObserveOp, EmitOp, CompleteOp], Field(discriminator="op")]


class FlowProgram(BaseModel):
    """One flow. `inputSchema` (JSON Schema) with `validateInput: true` makes
    start() parse its input before anything is appended (ADR 0077, Context)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: Literal["loomcheck-flow/1"] = LANGUAGE
    body: list[Op]
    inputSchema: dict[str, Any] | None = None
    validateInput: bool = False

    @model_validator(mode="after")
    def _unique_steps(self) -> "FlowProgram":
        seen: set[str] = set()
        for op in self.body:
            if isinstance(op, StepOp):
                if op.id in seen:
                    raise ValueError(f"step id '{op.id}' is used twice")
                seen.add(op.id)
        if self.validateInput and self.inputSchema is None:
            raise ValueError("validateInput needs an inputSchema")
        return self

    def gates(self) -> list[str]:
        """The gate names in the order a run reaches them (programs are linear)."""
        body = self.body
        names: list[str] = []
        for op in body:
            if isinstance(op, CompleteOp):
                break
            if isinstance(op, SuspendOp):
                names.append(op.on)
        return names
