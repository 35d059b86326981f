"""The regression-log format (`loomcheck-regression/1`): a replayable script of driver
operations, the flows it needs, and what a conforming kernel must produce; the ADRs' worked
traces in spec/regressions/ and the loader. The format: docs/spec-data.md, "Regression logs"."""

from __future__ import annotations

import difflib
import json
from importlib.resources.abc import Traversable
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, ValidationError

from loomcheck.spec.errors import SpecError, describe_validation_error
from loomcheck.spec.canonical import depth
from loomcheck.spec.files import SPEC_ROOT, deep_json, read_json, spec_label

FORMAT = "loomcheck-regression/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


_JSON_SCALARS = (str, int, float, bool, type(None))
# Past any value the suite sends (spec/canonical-json.md's deepest is 100 000): only a value that
# contains itself (in process, never from a file) is stopped by it.
DEEPEST = 1_000_000


def _json_at_any_depth(value: Any) -> Any:
    """`value` if it is JSON as json.loads builds it, checked with an explicit stack: a hostile
    input or payload (the hostile-payloads corpus) nests thousands deep, past pydantic's JsonValue."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (dict, list)):
            if level >= DEEPEST:
                raise ValueError(f"nested deeper than {DEEPEST}")
            if isinstance(node, dict) and not all(isinstance(key, str) for key in node):
                raise ValueError("an object key is not a string")
            stack.extend((child, level + 1) for child in (node.values() if isinstance(node, dict) else node))
        elif not isinstance(node, _JSON_SCALARS):
            raise ValueError(f"{type(node).__name__} is not JSON")
    return value


# A start's input, a resume's payload: any JSON value, nested at any depth. Written out as given
# (dump_regression), as a program is: pydantic's serializer stops short of such a value.
DeepJson = Annotated[Any, AfterValidator(_json_at_any_depth),
                     Field(json_schema_extra={"description": "any JSON value, nested at any depth"})]
RAW_FIELDS = ("program", "input", "payload")  # what dump_regression writes as given
INDENTED_DEPTH = 64  # a log nested deeper is written on one line


class DefineModel(_Model):
    op: Literal["define"]
    flow: str
    # Any, not JsonValue: a gate's view may nest 1024 deep (ADR 0117 D1), past pydantic's
    # own limit; spec/programs.py validates the program.
    program: dict[str, Any]


class StartModel(_Model):
    op: Literal["start"]
    execution: str
    flow: str
    input: DeepJson = None


class DiscardLegacyAnswersModel(_Model):
    """The operator override of ADR 0104 D2: at step `stepId`, discard `count` legacy answers."""

    stepId: str = Field(min_length=1, strict=True)
    count: int = Field(ge=0, le=2**53 - 1, strict=True)  # strict: 2.0, "2" and true are not counts


class ResumeOptionsModel(_Model):
    """What travels with a resume besides its type and payload (ADR 0117 D2)."""

    proof: JsonValue = Field(default=None, description="{actor, exp, signature}: the approver's signature (spec/signing.md)")
    principal: JsonValue = Field(default=None, description="{actor}: the calling principal, when the call carries one")
    # ADR 0104 D2: the override is {stepId, count}. Like proof, any other value is kept as
    # written (left to right: a well-formed override is the model, the rest raw JSON), so a
    # log can pin the kernel's refusal of a malformed one; logs written before it hold false.
    discardLegacyAnswers: Union[DiscardLegacyAnswersModel, JsonValue] = Field(
        default=None, union_mode="left_to_right",
        description="{stepId, count}: the operator override of ADR 0104 D2; absent, null or false: none")
    transformState: dict[str, JsonValue] | None = Field(
        default=None, description="resume-as only: {name, ...arguments}, a transform from the registry (spec/transforms.py, ADR 0056)")


class ResumeModel(_Model):
    op: Literal["resume"]
    execution: str
    type: str
    payload: DeepJson = None
    options: ResumeOptionsModel | None = None


class ResumeAsModel(_Model):
    op: Literal["resume-as"]
    execution: str
    flow: str
    type: str
    payload: DeepJson = None
    options: ResumeOptionsModel | None = None


class AuthenticatorConfigModel(_Model):
    gates: list[str]
    keys: dict[str, str | list[str]] = Field(description="actor -> secret, or several secrets (key rotation)")
    requireActor: bool = True


class ConfigureModel(_Model):
    """Compose the runtime's security (ADR 0117 D2, D3): flows and executions are kept."""

    op: Literal["configure"]
    strict: bool = False
    requireResumeAuthenticator: bool = True
    authenticator: AuthenticatorConfigModel | None = None


class AdvanceClockModel(_Model):
    """Move the runtime's clock forward; its timer service wakes every due timed park (ADR 0117 D5)."""

    op: Literal["advance-clock"]
    ms: int = Field(ge=0)


class RecoverModel(_Model):
    op: Literal["recover"]
    execution: str


class RecoverAbandonedModel(_Model):
    op: Literal["recover-abandoned"]


class RestartModel(_Model):
    op: Literal["restart"]


class EventModel(_Model):
    seq: int = Field(ge=1)
    type: str
    payload: JsonValue = None


class LoadModel(_Model):
    op: Literal["load"]
    execution: str
    events: list[EventModel]
    snapshot: dict[str, JsonValue] | None = None


InFlightModel = Annotated[Union[StartModel, ResumeModel, ResumeAsModel, RecoverModel], Field(discriminator="op")]


class KillModel(_Model):
    """A real crash: the kernel's process is killed with SIGKILL and started again on the
    same store (feature "durable", docs/protocol.md). With `during`, it dies while that
    operation runs: at its `afterAppends`-th append (feature "kill-points"), or, when the
    operation appends fewer, just after it answers."""

    op: Literal["kill"]
    during: InFlightModel | None = None
    afterAppends: int | None = Field(default=None, ge=1)


OperationModel = Annotated[Union[DefineModel, StartModel, ResumeModel, ResumeAsModel, RecoverModel,
                                 RecoverAbandonedModel, RestartModel, LoadModel, ConfigureModel, AdvanceClockModel,
                                 KillModel],
                           Field(discriminator="op")]


class Expectation(_Model):
    """What a conforming kernel produces, as observables (run/replay.py compares them):
    outcomes by reason (and error type), logs by event type and the payload fields a decision
    defines (spec/observables.toml). Where the ADRs admit several, the expectation lists them."""

    outcomes: list[Union[str, list[str]]] = Field(description='per operation: "ok", "ok:crashed" (the worker died), "ok:[ids]" (recover-abandoned, advance-clock: the executions re-driven or woken) or "refused:<reason>"; a list: any of these outcomes is correct (spec/profiles.toml, kind reason)')
    errors: list[str | None] | None = Field(default=None, description="per operation: the refusal's error type (null when accepted); absent in logs written before it was recorded")
    orders: list[str] = Field(default=[], description="order choices of spec/profiles.toml the log's events may take either way, e.g. approval-position")
    logs: dict[str, list[EventModel]]


class Found(_Model):
    """The failure a counterexample was written for, and what the implementation did with its
    operations (files written before these were recorded hold only the first three)."""

    invariant: str
    message: str
    implementation: str
    outcomes: list[str] | None = Field(default=None, description='per operation, as the implementation answered it: '
                                                                 '"ok", "ok:crashed", "ok:[ids]" or "refused:<reason>"')
    appended: list[dict[str, list[int]]] | None = Field(
        default=None, description="per operation: each execution it appended to, with the sequence numbers appended")
    logs: dict[str, list[DeepJson]] | None = Field(
        default=None, description="each execution's log after the last operation, as the implementation returned it")


class RegressionLog(_Model):
    format: Literal["loomcheck-regression/1"] = FORMAT
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    description: str
    adr: str = Field(pattern=r"^\d{4}$")
    invariants: list[str] = Field(min_length=1)
    # "promoted": a counterexample a person copied into a committed corpus with `loomcheck promote`.
    origin: Literal["adr", "counterexample", "promoted"]
    operations: list[OperationModel] = Field(min_length=1)
    expect: Expectation | None = None
    found: Found | None = None


def load_regression(path: Traversable | Path) -> RegressionLog:
    label = spec_label(path)
    raw = read_json(path, label)
    try:
        return RegressionLog.model_validate(raw)
    except ValidationError as exc:
        raise describe_validation_error(label, exc, "operations", raw) from None


class UnknownRegression(ValueError):
    """Neither a file nor the name of a committed regression log; the message names the nearest logs."""


def committed_names() -> list[str]:
    """The names of the committed regression logs (spec/regressions/NAME.json)."""
    return sorted(p.name[:-len(".json")] for p in (SPEC_ROOT / "regressions").iterdir() if p.name.endswith(".json"))


def committed_name(label: str) -> str | None:
    """The name of the committed log `label` is (`spec/regressions/NAME.json`, as a report records
    it, or that file's path anywhere), or None for any other file."""
    path = PurePath(label)
    if path.suffix != ".json" or path.parts[-3:-1] != ("spec", "regressions"):
        return None
    return path.stem if (SPEC_ROOT / "regressions" / path.name).is_file() else None


def find_regression(given: str) -> Traversable | Path:
    """A regression log as a user names it: a file's path, or a committed log by its name
    (`0057-three-gate-completion`, `.json` optional) or by `spec/regressions/NAME.json` as a report
    records it, found inside the package from any directory. Raises UnknownRegression, naming the
    nearest committed logs, when it is neither."""
    path = Path(given)
    if path.exists():
        return path  # a directory or an unreadable file: load_regression says why
    name = committed_name(given) or (given[:-len(".json")] if given.endswith(".json") else given)
    if PurePath(name).name == name and name:
        packaged = SPEC_ROOT / "regressions" / f"{name}.json"
        if packaged.is_file():
            return packaged
    nearest = difflib.get_close_matches(PurePath(name).name, committed_names(), n=3, cutoff=0.6)
    hint = (f"did you mean {' or '.join(nearest)}?" if nearest
            else "no committed log has a similar name (they are in spec/regressions/)")
    raise UnknownRegression(f"{given}: no such file, and no committed regression log of that name; {hint}")


def committed_regressions() -> list[tuple[str, RegressionLog]]:
    """The conformance corpus: every log in spec/regressions/, with its file's path."""
    folder = SPEC_ROOT / "regressions"
    return [(str(p), load_regression(p)) for p in sorted(folder.iterdir(), key=lambda p: p.name)
            if p.name.endswith(".json")]


def _dumped(op: BaseModel) -> dict[str, Any]:
    raw = [name for name in RAW_FIELDS if name in type(op).model_fields]
    data = op.model_dump(mode="json", exclude_none=True, exclude=set(raw))
    for name in raw:
        if getattr(op, name) is not None or name == "program":
            data[name] = getattr(op, name)
    return {key: data[key] for key in type(op).model_fields if key in data}


def dump_regression(log: RegressionLog) -> str:
    data = log.model_dump(mode="json", exclude_none=True, exclude={"operations": True, "found": {"logs"}})
    if log.found is not None and log.found.logs is not None:  # as given, like a payload: it may nest as deep
        data["found"]["logs"] = log.found.logs
    # A define's program, a start's input and a resume's payload go out as given: pydantic's
    # serializer stops short of a view nested 1024 deep (ADR 0117 D1) or a payload nested
    # thousands deep (the hostile-payloads corpus), which the models keep as plain data.
    operations = [_dumped(op) for op in log.operations]
    ordered = {key: (operations if key == "operations" else data[key])
               for key in RegressionLog.model_fields if key in data or key == "operations"}
    # Indented for a person, unless a value nests deeper than anyone reads: the indentation of a
    # payload nested thousands deep would grow with the square of its depth.
    indent = 2 if depth(ordered) <= INDENTED_DEPTH else None
    text = deep_json(lambda: json.dumps(ordered, indent=indent, ensure_ascii=False)) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (the hostile-names corpus) only survives as an escape
        text = deep_json(lambda: json.dumps(ordered, indent=indent)) + "\n"
    return text


__all__ = ["RegressionLog", "Expectation", "Found", "OperationModel", "load_regression", "committed_regressions",
           "committed_name", "committed_names", "find_regression", "UnknownRegression", "dump_regression", "SpecError"]
