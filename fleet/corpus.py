"""The fleet corpus format, loomcheck.fleet/1: logs written by a mixed-version
fleet and the verdict spec/legacy-logs.md (ADR 0104 D2) gives each.

The pydantic models are the single source of truth; reports/schemas.py exports them
as spec/schemas/fleet-corpus.schema.json so another kernel's test suite can read
a corpus without loomcheck. Every JSON value is kept exactly as written: a flow
program is stored as the JSON that was defined (its code version is the hash of
that JSON, spec/versions.py), and a null payload is a real value, never "absent".
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

FORMAT = "loomcheck.fleet/1"
SchemaVersion = Literal["1.15.0", "1.19.0", "1.20.0"]
Verdict = Literal["passed", "at-risk", "harmless", "unverifiable"]
Why = Literal["in-doubt-verdict", "terminal", "recovery", "unparked", "human-reanswer", "snapshot"]
Shape = Literal["reparked-after-answer", "stray-before-first-start"]
Status = Literal["pending", "running", "suspended", "completed", "failed", "cancelled"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LogEvent(_Model):
    seq: int = Field(ge=1)
    type: str
    payload: JsonValue


class Operation(_Model):
    """One operation of the history, by one node. `result` is "ok", "crashed" (the
    worker died while running the flow) or "refused:<reason>" (skipped: nothing appended)."""

    op: Literal["start", "resume", "resumeAs", "recover", "truncate", "append"]
    writer: SchemaVersion
    type: str | None = None
    payload: JsonValue = None
    flowId: str | None = None
    upto: int | None = None
    events: list[dict[str, JsonValue]] | None = None
    result: str


class FinalOperation(_Model):
    """The one operation judged by the current kernel (EVENT_SCHEMA 1.20.0)."""

    op: Literal["resume", "resumeAs", "recover"]
    type: str | None = None
    payload: JsonValue = None
    flowId: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> "FinalOperation":
        if self.op != "recover" and not self.type:
            raise ValueError(f"a {self.op} names the event type it resumes with")
        if self.op == "resumeAs" and not self.flowId:
            raise ValueError("a resumeAs names its target flow")
        return self


class ClassifiedEntry(_Model):
    index: int = Field(ge=0)
    seq: int = Field(ge=0, description="the EXECUTION_RESUMED that created it; 0 for an entry the snapshot holds")
    why: Why
    verdict: Verdict


class AmbiguityRecord(_Model):
    stepId: str
    shape: Shape
    seq: int = Field(ge=1)


class Received(_Model):
    """What one suspend point got on the run: its position among the program's
    suspend points in call order, its name, the value (a loomcheck.observed payload)."""

    gate: int = Field(ge=0)
    on: str
    value: JsonValue


class Expectation(_Model):
    classified: list[ClassifiedEntry]
    ambiguities: list[AmbiguityRecord] = Field(description="unresolved only")
    warned: list[Literal["passed", "at-risk", "unverifiable"]]
    outcome: Literal["accepted", "refused"]
    reason: Literal["ambiguous-legacy-answers"] | None = None
    answers: list[JsonValue] | None = Field(None, description="the answer list after the final operation (accepted)")
    receives: list[Received] | None = Field(None, description="every suspend point the run got past, in call order")
    observed: list[Received] | None = Field(None, description="the loomcheck.observed payloads the run appends")
    status: Status | None = Field(None, description="the execution's status after the run (running: it crashed)")

    @model_validator(mode="after")
    def _consistent(self) -> "Expectation":
        refused = self.outcome == "refused"
        if refused != bool(self.ambiguities) or refused != (self.reason is not None):
            raise ValueError("refused exactly when an ambiguity is unresolved, with reason ambiguous-legacy-answers")
        if not refused and (self.answers is None or self.receives is None or self.observed is None):
            raise ValueError("an accepted case records the answers, what the gates receive and what is observed")
        return self


class GateRef(_Model):
    index: int = Field(ge=0)
    on: str


class Downgrade(_Model):
    """ADR 0104 D2, "Downgrade follows from that": a 1.20.0 null resume read by an
    older node. The entries under each fold, and what the gate at the null's index
    receives when the final operation runs on an old node and on the current one."""

    currentEntries: list[JsonValue]
    pre120Entries: list[JsonValue]
    nullAt: list[int]
    gate: GateRef
    receivesCurrent: JsonValue
    receivesPre120: JsonValue


class Case(_Model):
    id: str = Field(min_length=1)
    kind: Literal["generated", "fixed", "downgrade-hazard"]
    title: str
    schedule: Literal["all-old", "rolling", "rolling-straggler", "all-new"] | None = None
    executionId: str = Field(min_length=1)
    flowId: str = Field(min_length=1)
    program: dict[str, JsonValue] = Field(description="a flow program as defined (spec/schemas/flow-program.schema.json)")
    targets: dict[str, dict[str, JsonValue]] = Field(default_factory=dict,
                                                    description="other flows, by id, a resumeAs may target")
    log: list[LogEvent] = Field(description="the retained log before the final operation, exactly what a kernel loads")
    snapshot: dict[str, JsonValue] | None = Field(None, description="the folded state as of the first retained seq - 1")
    writers: list[SchemaVersion] = Field(description="the EVENT_SCHEMA version of each operation performed, in order")
    history: list[Operation]
    final: FinalOperation
    live: bool = Field(description="the final operation re-opens a terminal execution (judged live)")
    expected: Expectation
    downgrade: Downgrade | None = None

    @model_validator(mode="after")
    def _programs(self) -> "Case":
        from loomcheck.spec.programs import FlowProgram

        for program in [self.program, *self.targets.values()]:
            FlowProgram.model_validate(program)
        return self


class Corpus(_Model):
    format: Literal["loomcheck.fleet/1"] = FORMAT
    seed: int
    count: int = Field(ge=0, description="how many generated cases (the fixed ones come on top)")
    cases: list[Case]


def dump(corpus: Corpus) -> str:
    """The corpus as JSON text: one case per line, so two corpora diff case by case."""
    head = corpus.model_dump(mode="json", exclude={"cases"})
    lines = [_compact(case.model_dump(mode="json")) for case in corpus.cases]
    opening = _compact(head)[:-1] + ',"cases":['
    return opening + "\n" + ",\n".join(lines) + "\n]}\n"


def load(text: str) -> Corpus:
    return Corpus.model_validate_json(text)


def _compact(value: JsonValue) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


__all__ = ["FORMAT", "Corpus", "Case", "Expectation", "FinalOperation", "Operation", "Downgrade", "Received",
           "dump", "load"]
