"""The resume-schema conformance kit (ADR 0077): the battery every kernel's `resumeSchemas`
parser must pass, its cases the published vectors spec/vectors/resume-schemas.json, run by
`check(parse)` or by subclassing `ResumeSchemaConformance`. How, and how a case is judged:
docs/resume-schema-kit.md."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from loomcheck.reference.events import JSON
from loomcheck.spec.errors import SpecError
from loomcheck.spec.files import SPEC_ROOT, read_json, spec_label
from loomcheck.spec.parsing import Parsed, parse

__all__ = ["Case", "Failure", "Outcome", "ResumeSchemaConformance", "VECTORS", "cases", "check",
           "json_difference", "loomcheck_parse", "verdict"]

VECTORS = SPEC_ROOT / "vectors" / "resume-schemas.json"

ROOT = "(root)"  # the `field` of a refusal about the payload itself

Outcome = tuple[Literal["ok"], JSON] | tuple[Literal["invalid"], str]
Parse = Callable[[dict[str, Any], Any], Outcome]


@dataclass(frozen=True)
class Case:
    """One payload parsed against its group's schema, and the required answer."""

    group: str
    description: str
    schema: dict[str, Any]
    payload: JSON
    valid: bool
    recorded: JSON = None  # valid cases: exactly what is recorded (ADR 0077)
    field: str | None = None  # invalid cases: the path the refusal names, "/"-joined
    mentions: str | None = None  # invalid cases: a property the refusal must also name

    @property
    def id(self) -> str:
        return f"{self.group}: {self.description}"

    def must_name(self) -> list[str]:
        """What an invalid case's refusal message must contain."""
        names = [] if self.field in (None, ROOT) else [self.field.split("/")[0]]
        return names + ([self.mentions] if self.mentions is not None else [])


@dataclass(frozen=True)
class Failure:
    case: Case
    explanation: str

    def __str__(self) -> str:
        return f"{self.case.id}: {self.explanation}"


def _case(group: dict[str, Any], raw: dict[str, Any]) -> Case:
    valid = raw["valid"]
    if valid is not True and valid is not False:
        raise SpecError(f"{group['description']}: {raw['description']}: `valid` is not a boolean")
    if valid:
        return Case(group["description"], raw["description"], group["schema"], raw["payload"], True,
                    recorded=raw["recorded"])
    return Case(group["description"], raw["description"], group["schema"], raw["payload"], False,
                field=raw["field"], mentions=raw.get("mentions"))


def cases() -> list[Case]:
    """Every case of `spec/vectors/resume-schemas.json`, in file order."""
    label = spec_label(VECTORS)
    document = read_json(VECTORS, label)
    try:
        return [_case(group, raw) for group in document["groups"] for raw in group["cases"]]
    except (KeyError, TypeError) as exc:
        raise SpecError(f"{label}: not a resume-schema battery: missing or malformed {exc}") from None


# ------------------------------------------------------------------ judging


def _kind(value: Any) -> str:
    """The JSON kind of a Python value; bool before int, since True is an int."""
    if value is None:
        return "null"
    for kind, types in (("boolean", bool), ("integer", int), ("number", float), ("string", str),
                        ("array", list), ("object", dict)):
        if isinstance(value, types):
            return kind
    return f"not JSON ({type(value).__name__})"


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_difference(actual: Any, expected: JSON, where: str = "recorded") -> str | None:
    """None when `actual` equals `expected` with the same JSON kinds all the way
    down, else where and how they first differ."""
    if _kind(actual) != _kind(expected):
        return f"{where}: got {_short(actual)} ({_kind(actual)}), expected {_short(expected)} ({_kind(expected)})"
    if isinstance(expected, dict):
        if set(actual) != set(expected):
            extra = sorted(set(actual) - set(expected), key=repr)
            missing = sorted(set(expected) - set(actual), key=repr)
            parts = ([f"unexpected keys {extra}"] if extra else []) + ([f"missing keys {missing}"] if missing else [])
            return f"{where}: {', '.join(parts)}"
        for key, value in expected.items():
            if (difference := json_difference(actual[key], value, f"{where}[{key!r}]")) is not None:
                return difference
        return None
    if isinstance(expected, list):
        if len(actual) != len(expected):
            return f"{where}: length {len(actual)}, expected {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            if (difference := json_difference(got, want, f"{where}[{index}]")) is not None:
                return difference
        return None
    return None if actual == expected else f"{where}: got {_short(actual)}, expected {_short(expected)}"


def _judge(case: Case, outcome: Any) -> str | None:
    if not (isinstance(outcome, tuple) and len(outcome) == 2 and isinstance(outcome[0], str)
            and outcome[0] in ("ok", "invalid")):
        return f"answered {_short(outcome)}, not ('ok', value) or ('invalid', message)"
    kind, answer = outcome
    if case.valid:
        if kind == "invalid":
            return f"refused a valid payload: {_short(answer)}"
        difference = json_difference(answer, case.recorded)
        return None if difference is None else f"recorded the wrong value: {difference}"  # ADR 0077: parsed value
    if kind == "ok":
        return f"accepted a payload it must refuse at {case.field!r}, recording {_short(answer)}"
    if not isinstance(answer, str):
        return f"refused with {_short(answer)}, not a message"
    for name in case.must_name():
        if name not in answer:  # ADR 0077: refused with the offending field named
            return f"refusal does not name {name!r}: {_short(answer)}"
    return None


def verdict(case: Case, parse: Parse) -> str | None:
    """None when `parse` answers `case` correctly, else a one-line explanation."""
    payload = copy.deepcopy(case.payload)
    try:
        outcome = parse(copy.deepcopy(case.schema), payload)
    except Exception as exc:  # an implementation's crash fails its case, never the run
        return f"raised {type(exc).__name__}: {exc}".replace("\n", " ")
    try:
        wrong = _judge(case, outcome)
        if wrong is None and (changed := json_difference(payload, case.payload, "payload")) is not None:
            # The caller's event is what the authenticator verified (ADR 0077 D3, ADR 0117 D2): parse a copy.
            wrong = f"changed the payload it was given: {changed}"
    except Exception as exc:  # an answer so odd that comparing it raises
        wrong = f"answered {_short(outcome)}, which cannot be judged: {type(exc).__name__}: {exc}"
    return None if wrong is None else wrong.replace("\n", " ")


def check(parse: Callable[[dict, object], tuple[str, object]]) -> list[Failure]:
    """Every case `parse` answers wrongly, with why."""
    return [Failure(case, why) for case in cases() if (why := verdict(case, parse)) is not None]


def loomcheck_parse(schema: dict[str, Any], payload: Any) -> Outcome:
    """`spec/parsing.py` as an implementation of the battery."""
    result = parse(schema, payload)
    if isinstance(result, Parsed):
        return ("ok", result.value)
    return ("invalid", f"{result.field}: {result.message}")


# -------------------------------------------------------------- pytest kit

_CASES = cases()


class ResumeSchemaConformance:
    """Subclass as ``Test<Something>`` and implement `parse`. See the module docstring."""

    def parse(self, schema: dict[str, Any], payload: Any) -> Outcome:
        """Parse `payload` against the resume schema `schema`. Must be overridden."""
        raise NotImplementedError(f"{type(self).__name__} must implement parse()")

    @pytest.mark.parametrize("case", _CASES, ids=[case.id for case in _CASES])
    def test_resume_schema_case(self, case: Case) -> None:
        """The payload is recorded exactly as `recorded`, or refused naming `field` (ADR 0077)."""
        why = verdict(case, self.parse)
        if why is not None:
            pytest.fail(f"{case.id}: {why}\n  schema:  {case.schema!r}\n  payload: {case.payload!r}", pytrace=False)
