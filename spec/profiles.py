"""loomcheck's profile (data in profiles.toml): each choice the ADRs leave open that the suite
needs, with the sentence that leaves it open. Checks resting on one are reported as profile
agreement, apart from conformance; the admissible alternatives of a reason or an order are
honoured by every comparison."""

from __future__ import annotations

from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from loomcheck.spec.files import load_spec_model

# Driver operations whose refusal reason a choice may concern (contract/script.py's names).
Operation = Literal["resume", "resume-as", "recover", "start", "define", "configure"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Choice(_Strict):
    id: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    # "extension": a rule loomcheck adds beyond the ADRs; a kernel that follows the ADR only disagrees.
    # "limit": a bound the reference chooses where the ADRs name none (ingress sizes).
    kind: Literal["bytes", "wire-format", "reason", "order", "label", "text", "name", "shape", "extension", "limit"]
    chose: str = Field(min_length=1)
    why: str = Field(min_length=1)
    adr: str = Field(pattern=r"^\d{4}$")
    decision: str = Field(min_length=1)
    open: str = Field(min_length=10, description="the ADR's sentence that leaves the choice open, verbatim")
    admissible: tuple[str, ...] = ()
    operation: Operation | None = None
    situation: Literal["terminal", "park-gone"] | None = Field(
        default=None, description="reason choices: the state the execution is in when the alternatives apply "
                                  "(terminal: completed, failed or cancelled; park-gone: its park retained away)")

    @model_validator(mode="after")
    def _reasons_name_an_operation(self) -> "Choice":
        if self.kind == "reason" and (self.operation is None or self.situation is None or self.chose not in self.admissible):
            raise ValueError("a reason choice names its operation and situation, and its admissible reasons include "
                             "the one chosen")
        return self


class Profile(_Strict):
    name: str
    description: str
    choice: list[Choice] = Field(min_length=1)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(c.id for c in self.choice)

    def get(self, choice_id: str) -> Choice:
        for choice in self.choice:
            if choice.id == choice_id:
                return choice
        raise KeyError(choice_id)


@cache
def profile() -> Profile:
    return load_spec_model("profiles.toml", Profile, "choice")


def admissible_reasons(operation: str, reason: str, situation: str | None) -> tuple[str, ...]:
    """Every reason a correct kernel may give where the reference (the profile's `chose`) gives
    `reason` to `operation` (resume-as shares resume's) on an execution in `situation`
    ("terminal", "park-gone", or None for any other), the reference's first; just `reason`
    when the ADRs fix it."""
    kind = "resume" if operation == "resume-as" else operation
    for choice in profile().choice:
        # One way only, and only in its situation: a parked recovery is not-suspended, never terminal.
        if choice.kind == "reason" and choice.operation == kind and reason == choice.chose \
                and situation == choice.situation:
            return (reason, *(r for r in choice.admissible if r != reason))
    return (reason,)


def reasons_agree(operation: str, expected: str, got: str, situation: str | None) -> bool:
    return got in admissible_reasons(operation, expected, situation)
