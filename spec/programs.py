"""The flow-program language, version 1 (`loomcheck-flow/1`): the pydantic models of a program
and its ops, the single source of its JSON Schema. What each op does: docs/driver.md, "The
flow-program language"; why it is shaped so: docs/spec-data.md."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from loomcheck.spec.names import HUMAN_GATE, TIMER_FIRED

LANGUAGE = "loomcheck-flow/1"


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Crash(_Op):
    at: Literal["before-effect", "after-effect"]
    attempts: list[int] = Field(default=[1], min_length=1)


class EmitSpec(_Op):
    type: str = Field(min_length=1)
    payload: JsonValue = None


class StepOp(_Op):
    op: Literal["step"]
    id: str = Field(min_length=1)
    kind: Literal["idempotent", "non-idempotent", "human"] = "idempotent"
    output: JsonValue = None
    on: str = HUMAN_GATE
    crash: Crash | None = None
    emits: list[EmitSpec] = []

    @model_validator(mode="after")
    def _human_has_no_effect(self) -> "StepOp":
        if self.kind == "human" and (self.crash is not None or self.emits):
            raise ValueError("a human step has no effect to crash in or emit from")
        return self


KERNEL_SET = ("stepId", "viewDigest", "wakeAt")  # condition fields only the kernel writes


class SuspendOp(_Op):
    op: Literal["suspend"]
    on: str
    meta: dict[str, JsonValue] = {}
    # The proposal an approver is shown (see has_view()). Typed Any on purpose: pydantic's
    # JSON validation stops near 255 levels, and ADR 0117 D1 digests views up to 1024 deep;
    # canonical_json (iterative) is what validates it, below.
    view: Any = Field(default=None, json_schema_extra={"description": "any JSON value nested at most 1024 deep"})
    viewDigest: str | None = None   # a digest declared verbatim (say a `v1:` one an older kernel wrote)
    timeout: int | None = Field(default=None, ge=1)  # ms: a timed gate, woken by TIMER_FIRED at wakeAt

    @model_validator(mode="after")
    def _one_digest(self) -> "SuspendOp":
        if self.has_view() and self.viewDigest is not None:
            raise ValueError("a gate declares either a view (digested by the kernel) or a viewDigest, not both")
        for key in ("viewDigest", "wakeAt"):
            if key in self.meta:
                raise ValueError(f"meta may not set {key}: use the gate's view/viewDigest and timeout fields")
        if self.has_view():
            from loomcheck.spec.canonical import CanonicalError, canonical_json

            try:
                canonical_json(self.view)
            except CanonicalError as exc:  # ADR 0117 D1: a view nobody can be shown
                raise ValueError(f"view cannot be digested: {exc}") from None
        return self

    def has_view(self) -> bool:
        return "view" in self.model_fields_set


class SleepOp(_Op):
    """ctx.sleep: a suspend point on TIMER_FIRED that only the timer answers."""

    op: Literal["sleep"]
    ms: int = Field(ge=1)

    @property
    def on(self) -> str:
        return TIMER_FIRED


class ObserveOp(_Op):
    op: Literal["observe"]


class InputOp(_Op):
    op: Literal["input"]


class EmitOp(_Op):
    op: Literal["emit"]
    type: str = Field(min_length=1)
    payload: JsonValue = None


class CompleteOp(_Op):
    op: Literal["complete"]
    output: JsonValue = None


class DecideOp(_Op):
    op: Literal["decide"]
    id: str
    choice: JsonValue = None


Branch = Annotated[Union[StepOp, SuspendOp, SleepOp], Field(discriminator="op")]


class ParallelOp(_Op):
    op: Literal["parallel"]
    branches: list[Branch] = Field(min_length=1)


Op = Annotated[Union[StepOp, SuspendOp, SleepOp, ObserveOp, InputOp, EmitOp, CompleteOp, DecideOp, ParallelOp],
               Field(discriminator="op")]


def is_suspend_point(op: object) -> bool:
    """A call that consumes an answer: ctx.suspend, ctx.sleep, or a human step (ADR 0104 D1)."""
    return isinstance(op, (SuspendOp, SleepOp)) or (isinstance(op, StepOp) and op.kind == "human")


class FlowProgram(BaseModel):
    """One flow. `inputSchema` (JSON Schema) with `validateInput: true` makes
    start() parse its input before anything is appended (ADR 0077, Context).
    `resumeSchemas` maps a resume's event type (a gate's name) to the JSON Schema
    its payload must match: presence is the opt-in (ADR 0077 D1, D2); the parsed
    value (spec/parsing.py) is what is recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: Literal["loomcheck-flow/1"] = LANGUAGE
    body: list[Op]
    inputSchema: dict[str, Any] | None = None
    validateInput: bool = False
    resumeSchemas: dict[str, dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _schemas_are_schemas(self) -> "FlowProgram":
        from loomcheck.spec.parsing import check_schema

        for name, schema in [("inputSchema", self.inputSchema)] + [
                (f"resumeSchemas[{key!r}]", value) for key, value in (self.resumeSchemas or {}).items()]:
            problem = check_schema(schema) if schema is not None else None
            if problem:
                raise ValueError(f"{name} is not a JSON Schema: {problem}")
        return self

    def resume_schema(self, event_type: str) -> dict[str, Any] | None:
        """The declared schema for a resume of this type: own keys only (ADR 0077)."""
        schemas = self.resumeSchemas or {}
        return schemas.get(event_type) if type(event_type) is str else None

    @model_validator(mode="after")
    def _unique_steps(self) -> "FlowProgram":
        seen: set[str] = set()
        for op in self.calls():
            if isinstance(op, StepOp):
                if op.id in seen:
                    raise ValueError(f"step id '{op.id}' is used twice")
                seen.add(op.id)
        if self.validateInput and self.inputSchema is None:
            raise ValueError("validateInput needs an inputSchema")
        return self

    def calls(self) -> list[Op]:
        """Every context call in call order, parallel branches flattened, up to completion."""
        found: list[Op] = []
        for op in self.body:
            if isinstance(op, CompleteOp):
                break
            found.extend(op.branches if isinstance(op, ParallelOp) else [op])
        return found

    def suspend_points(self) -> list[Op]:
        return [op for op in self.calls() if is_suspend_point(op)]

    def gates(self) -> list[str]:
        """The names of the suspend points, in call order (programs are linear)."""
        return [op.on for op in self.suspend_points()]

    def step(self, step_id: str) -> StepOp | None:
        return next((op for op in self.calls() if isinstance(op, StepOp) and op.id == step_id), None)


def program_features(program: dict) -> set[str]:
    """The driver features a flow program (as JSON) needs to be run faithfully."""
    needs: set[str] = set()
    try:
        parsed = FlowProgram.model_validate(program)
    except ValueError:
        return needs
    if parsed.validateInput:
        needs.add("input-validation")
    if parsed.resumeSchemas:
        needs.add("resume-schemas")
    for op in parsed.body:
        if isinstance(op, ParallelOp):
            needs.add("parallel")
        if isinstance(op, DecideOp):
            needs.add("emit-guard")
    for op in parsed.calls():
        if isinstance(op, SleepOp) or (isinstance(op, SuspendOp) and op.timeout is not None):
            needs.add("timers")
        if isinstance(op, SuspendOp) and (op.has_view() or op.viewDigest is not None):
            needs.add("view-digest")
        if isinstance(op, StepOp):
            if op.kind == "human":
                needs.add("human-steps")
            if op.kind == "non-idempotent":
                needs.add("in-doubt")
            if op.crash is not None:
                needs.add("recover")
            if op.emits:
                needs.add("emit-guard")
    return needs
