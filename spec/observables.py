"""What a log comparison looks at (data in observables.toml): per event type, the payload
fields a decision defines. Everything else in a payload is the kernel's own (extra fields,
free-text messages, labels) and is never compared."""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loomcheck.spec.files import load_spec_model

ABSENT = "<absent>"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObservedEvent(_Strict):
    type: str = Field(min_length=1)
    decided: tuple[str, ...] = ()
    whole: bool = False
    by: str = Field(min_length=1, description="the decision that defines these fields")

    @model_validator(mode="after")
    def _one_of(self) -> "ObservedEvent":
        if self.whole and self.decided:
            raise ValueError("an event type is compared whole or by its decided fields, not both")
        return self


class Observables(_Strict):
    event: list[ObservedEvent]

    def of(self, event_type: object) -> ObservedEvent | None:
        return next((e for e in self.event if e.type == event_type), None)


@cache
def observables() -> Observables:
    return load_spec_model("observables.toml", Observables, "event")


def _at(payload: Any, path: str) -> Any:
    value = payload
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return ABSENT
        value = value[key]
    return value


def observed(event_type: object, payload: Any, skip: tuple[str, ...] = ()) -> Any:
    """What of `payload` is compared: the whole payload, or {decided path: value or ABSENT}.
    `skip` leaves out decided fields the implementation does not claim (code versions)."""
    rule = observables().of(event_type)
    if rule is None or rule.whole:
        return payload
    if rule.decided and not isinstance(payload, dict):
        return payload  # not an object where one is decided: compared as it is, so it differs
    return {path: _at(payload, path) for path in rule.decided if path not in skip}
