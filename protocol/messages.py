"""The messages of the driver protocol (`loomcheck-driver/1`, docs/protocol.md).

These pydantic models are the single source of truth for the published JSON
Schemas (spec/schemas/protocol/); the transports themselves build and read
plain dicts, because they sit on the hot path of every check."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel

PROTOCOL = "loomcheck-driver/1"

# op -> the request's fields besides "id" and "op", in the driver method's order.
FIELDS: dict[str, tuple[str, ...]] = {
    "hello": ("protocol",),
    "reset": (),
    "define": ("flow", "program"),
    "start": ("execution", "flow", "input"),
    "resume": ("execution", "type", "payload", "options"),
    "read-log": ("execution",),
    "read-state": ("execution",),
    "fold": ("events", "snapshot"),
    "load": ("execution", "events", "snapshot"),
    "recover": ("execution",),
    "recover-abandoned": (),
    "resume-as": ("execution", "flow", "type", "payload", "options"),
    "restart": (),
    "configure": ("config",),
    "parked-at-sequence": ("execution",),
    "sign": ("claim",),
    "advance-clock": ("ms",),
    "effects": ("execution",),
    "warnings": (),
    "append-events": ("execution", "events"),
    "erase": ("execution",),
    "truncate-prefix": ("execution", "upto"),
    "arm-kill": ("afterAppends",),
    "shutdown": (),
}
# Operations whose result is an outcome: accepted ({"crashed": bool}) or a refused error.
OUTCOMES = frozenset({"define", "start", "resume", "load", "recover", "resume-as", "configure", "append-events",
                      "truncate-prefix"})
# The feature each optional message belongs to (docs/driver.md).
FEATURE_OF = {"fold": "fold", "load": "load-log", "recover": "recover", "recover-abandoned": "recover",
              "resume-as": "resume-as", "restart": "restart", "configure": "security",
              "parked-at-sequence": "security", "sign": "signing", "advance-clock": "timers", "effects": "effect-ledger",
              "warnings": "legacy-scan", "append-events": "legacy-scan", "erase": "legacy-scan",
              "truncate-prefix": "retention", "arm-kill": "kill-points"}


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Request(_Message):
    id: int = Field(ge=0, description="echoed by the response")


class Hello(_Request):
    op: Literal["hello"]
    protocol: Literal["loomcheck-driver/1"]


class Reset(_Request):
    op: Literal["reset"]


class Define(_Request):
    op: Literal["define"]
    flow: str
    program: dict[str, Any] = Field(description="a flow program (flow-program.schema.json)")


class Start(_Request):
    op: Literal["start"]
    execution: str
    flow: str
    input: Any = None


class Resume(_Request):
    op: Literal["resume"]
    execution: str
    type: str
    payload: Any = None
    options: dict[str, Any] | None = Field(default=None, description="{proof?, principal?, discardLegacyAnswers?} (feature security)")


class ResumeAs(_Request):
    op: Literal["resume-as"]
    execution: str
    flow: str
    type: str
    payload: Any = None
    options: dict[str, Any] | None = Field(default=None, description="as for resume, plus transformState (feature state-migration)")


class _Execution(_Request):
    execution: str


class ReadLog(_Execution):
    op: Literal["read-log"]


class ReadState(_Execution):
    op: Literal["read-state"]


class Recover(_Execution):
    op: Literal["recover"]


class ParkedAtSequence(_Execution):
    op: Literal["parked-at-sequence"]


class Effects(_Execution):
    op: Literal["effects"]


class Erase(_Execution):
    op: Literal["erase"]


class Event(_Message):
    seq: int | None = Field(default=None, description="present in logs; absent in append-events")
    type: str
    payload: Any = None


class Fold(_Request):
    op: Literal["fold"]
    events: list[Event]
    snapshot: dict[str, Any] | None = None


class Load(_Request):
    op: Literal["load"]
    execution: str
    events: list[Event]
    snapshot: dict[str, Any] | None = None


class AppendEvents(_Request):
    op: Literal["append-events"]
    execution: str
    events: list[Event]


class TruncatePrefix(_Request):
    op: Literal["truncate-prefix"]
    execution: str
    upto: int = Field(ge=0)


class RecoverAbandoned(_Request):
    op: Literal["recover-abandoned"]


class Restart(_Request):
    op: Literal["restart"]


class Configure(_Request):
    op: Literal["configure"]
    config: dict[str, Any]


class ClaimEvent(_Message):
    type: str
    payload: Any = None


class ClaimOperation(_Message):
    """What the approval is for, beyond ADR 0117 D2 (spec/signing.md section 10)."""

    type: Literal["resume", "resumeAs"]
    flowId: str | None = Field(default=None, description="resumeAs: the target flow")
    transformState: Any = Field(default=None, description="resumeAs: the transformState it is sent with, or null")


class Claim(_Message):
    """What an approver signs (ADR 0117 D2): the whole event and the one park it answers."""

    executionId: str
    parkedAtSequence: int = Field(description="the seq of the EXECUTION_SUSPENDED the approval answers")
    actor: str
    exp: int = Field(description="milliseconds since the epoch after which the proof is void")
    event: ClaimEvent
    discardLegacyAnswers: Any = Field(default=False, description="false, or the override {stepId, count} (ADR 0104 D2)")
    operation: ClaimOperation | None = Field(default=None, description="the operation the approval is for, so a "
                                             "format can bind it (spec/signing.md section 10); absent: a resume")


class Sign(_Request):
    op: Literal["sign"]
    claim: Claim = Field(description="signed by the implementation's approver side with the keys it was configured with")


class AdvanceClock(_Request):
    op: Literal["advance-clock"]
    ms: int = Field(ge=0)


class Warnings(_Request):
    op: Literal["warnings"]


class ArmKill(_Request):
    op: Literal["arm-kill"]
    afterAppends: int = Field(ge=1, description="die (SIGKILL) once this many more appends are durable (feature kill-points)")


class Shutdown(_Request):
    op: Literal["shutdown"]


Request = RootModel[Annotated[Union[
    Hello, Reset, Define, Start, Resume, ResumeAs, ReadLog, ReadState, Fold, Load, Recover, RecoverAbandoned,
    Restart, Configure, ParkedAtSequence, Sign, AdvanceClock, Effects, Warnings, AppendEvents, Erase, TruncatePrefix,
    ArmKill, Shutdown,
], Field(discriminator="op")]]


class HelloResult(_Message):
    protocol: Literal["loomcheck-driver/1"]
    name: str = Field(min_length=1)
    version: str
    eventSchema: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    features: list[str] = []


class Accepted(_Message):
    """The result of an operation that may be refused, when it was not."""

    crashed: bool = Field(default=False, description="a crash fault of the flow program fired while it ran; what was appended stays")


class Refused(_Message):
    kind: Literal["refused"]
    definite: Literal[True] = Field(description="a refusal appends nothing: it definitely did not happen")
    error: str = Field(description="the error type, e.g. ResumeRefusedError")
    reason: str = Field(description="the reason, from spec/refusals.toml")
    message: str = ""


class Unsupported(_Message):
    kind: Literal["unsupported"]
    definite: Literal[True]
    message: str = ""


class Failed(_Message):
    kind: Literal["failed"]
    definite: bool = Field(description="true: it did not happen; false: it may have happened")
    message: str = ""


class Success(_Message):
    id: int
    result: Any = Field(description="hello: HelloResult; outcomes: Accepted; reads: the value (see docs/protocol.md)")


class Error(_Message):
    id: int
    error: Annotated[Union[Refused, Unsupported, Failed], Field(discriminator="kind")]


Response = RootModel[Union[Success, Error]]


class LoggedEvent(_Message):
    seq: int
    type: str
    payload: Any


class Signed(_Message):
    proof: dict[str, Any] = Field(description="opaque to the harness: sent as options.proof of the resume it was signed for")


class SignRefusal(_Message):
    reason: str = Field(min_length=1, description="why the approver side cannot sign it (e.g. unknown-actor)")
    message: str = ""


class SignRefused(_Message):
    refused: SignRefusal


class EffectRecord(BaseModel):
    stepId: str
    attempt: int


# op -> the type of its result (docs/protocol.md), for results.schema.json.
RESULTS: dict[str, Any] = {
    "hello": HelloResult,
    **{op: Accepted for op in sorted(OUTCOMES)},
    "reset": None, "restart": None, "erase": None, "arm-kill": None, "shutdown": None,
    "read-log": list[LoggedEvent],
    "read-state": dict[str, Any],
    "fold": dict[str, Any],
    "recover-abandoned": list[str],
    "advance-clock": list[str],
    "parked-at-sequence": int | None,
    "sign": Union[Signed, SignRefused],
    "effects": list[EffectRecord],
    "warnings": list[dict[str, Any]],
}
