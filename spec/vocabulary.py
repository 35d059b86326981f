"""The event vocabulary, EVENT_SCHEMA history and refusal reasons (data in
events.toml and refusals.toml). The reference kernel reads its kernel
namespace from here rather than keeping its own list."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from loomcheck.spec.files import load_spec_model

VERSION_PATTERN = r"^\d+\.\d+\.\d+$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SchemaVersion(_Strict):
    version: str = Field(pattern=VERSION_PATTERN)
    adr: str
    change: str


class EventType(_Strict):
    type: str = Field(min_length=1)
    kernel: bool
    since: str = Field(pattern=VERSION_PATTERN)
    payload: str
    fold: str


class EmitGuard(_Strict):
    allowed: list[str]
    audit: list[str]
    quota_reason_max: int = Field(gt=0)
    reserved_decision_prefix: str = Field(min_length=1)
    meter_ceilings: dict[str, float]


class Vocabulary(_Strict):
    current: str = Field(pattern=VERSION_PATTERN)
    history: list[SchemaVersion]
    event: list[EventType]
    emit_guard: EmitGuard

    @property
    def kernel_types(self) -> frozenset[str]:
        return frozenset(e.type for e in self.event if e.kernel)


class Refusal(_Strict):
    reason: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    error: Literal["ResumeRefusedError", "ResumePayloadValidationError", "InputValidationError",
                   "FlowDefinitionError", "StateMigrationError", "FlowCodeMismatchError", "EmitRefusedError", "ConfigError"]
    adr: str | None = Field(default=None, pattern=r"^\d{4}$", description="absent for the kernel model's own refusals")
    decision: str
    description: str


class Refusals(_Strict):
    refusal: list[Refusal]

    @property
    def reasons(self) -> frozenset[str]:
        return frozenset(r.reason for r in self.refusal)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@cache
def vocabulary() -> Vocabulary:
    return load_spec_model("events.toml", Vocabulary, "event")


@cache
def refusals() -> Refusals:
    return load_spec_model("refusals.toml", Refusals, "refusal")


def kernel_event_types() -> frozenset[str]:
    """knownEventTypes(): the kernel namespace (ADR 0104 D1)."""
    return vocabulary().kernel_types
