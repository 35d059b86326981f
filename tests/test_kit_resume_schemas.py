"""The resume-schema kit (ADR 0077): spec/parsing.py passes its battery, the
battery is well-formed, and seeded faulty parsers each fail the cases written
to catch them."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loomcheck.kits.resume_schemas import (
    VECTORS, Case, Failure, Outcome, ResumeSchemaConformance, cases, check, json_difference, loomcheck_parse, verdict,
)
from loomcheck.spec.files import read_json, spec_label
from loomcheck.spec.parsing import Invalid, Parsed, check_schema, parse


class TestSpecParsing(ResumeSchemaConformance):
    """spec/parsing.py through the pytest kit, one test per case."""

    def parse(self, schema: dict[str, Any], payload: Any) -> Outcome:
        return loomcheck_parse(schema, payload)


def test_spec_parsing_passes_every_case() -> None:
    assert check(loomcheck_parse) == []


def test_every_expectation_is_exactly_what_spec_parsing_produces() -> None:
    """Stricter than `check`: the whole Invalid.field, not its first segment."""
    for case in cases():
        result = parse(case.schema, case.payload)
        if case.valid:
            assert isinstance(result, Parsed), f"{case.id}: {result}"
            assert json_difference(result.value, case.recorded) is None, case.id
        else:
            assert isinstance(result, Invalid) and result.field == case.field, f"{case.id}: {result}"
            assert case.mentions is None or case.mentions in result.message, f"{case.id}: {result}"


# ---------------------------------------------------------------- the file

# The battery's own format: JSON-Schema-Test-Suite groups, plus `recorded` / `field` / `mentions`.
FORMAT: dict[str, Any] = {
    "type": "object",
    "required": ["description", "parsing", "groups"],
    "additionalProperties": False,
    "properties": {
        "description": {"type": "string"},
        "parsing": {"const": "spec/parsing.py"},
        "groups": {"type": "array", "minItems": 1, "items": {
            "type": "object",
            "required": ["description", "schema", "cases"],
            "additionalProperties": False,
            "properties": {
                "description": {"type": "string", "minLength": 1},
                "schema": {"type": "object"},
                "cases": {"type": "array", "minItems": 1, "items": {"oneOf": [
                    {"type": "object", "required": ["description", "payload", "valid", "recorded"],
                     "additionalProperties": False,
                     "properties": {"description": {"type": "string", "minLength": 1}, "payload": True,
                                    "valid": {"const": True}, "recorded": True}},
                    {"type": "object", "required": ["description", "payload", "valid", "field"],
                     "additionalProperties": False,
                     "properties": {"description": {"type": "string", "minLength": 1}, "payload": True,
                                    "valid": {"const": False}, "field": {"type": "string", "minLength": 1},
                                    "mentions": {"type": "string", "minLength": 1}}},
                ]}},
            },
        }},
    },
}


def test_the_file_has_the_battery_format() -> None:
    document = read_json(VECTORS)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft202012Validator(FORMAT).iter_errors(document)]
    assert errors == []
    for group in document["groups"]:
        assert check_schema(group["schema"]) is None, group["description"]


def test_the_file_is_package_data() -> None:
    assert spec_label(VECTORS) == "spec/vectors/resume-schemas.json"
    assert VECTORS.is_file()


def test_every_case_is_reachable() -> None:
    """No two groups share a description, no two cases in a group do, so every
    case has its own pytest id and its own line in a failure report."""
    all_cases = cases()
    groups = [group["description"] for group in read_json(VECTORS)["groups"]]
    assert len(groups) == len(set(groups))
    assert len({(c.group, c.description) for c in all_cases}) == len(all_cases)
    assert len({c.id for c in all_cases}) == len(all_cases)


def test_the_rules_the_brief_names_are_covered() -> None:
    all_cases = cases()
    payload_keys = {key for c in all_cases if isinstance(c.payload, dict) for key in c.payload}
    declared = {key for c in all_cases for key in c.schema.get("properties", {})}
    hostile = {"__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "__class__", "__init__", "__dict__",
               "", "approved\x00", "\u0430pproved"}
    assert hostile <= payload_keys
    assert {"__proto__", "constructor", "toString", "__class__", "", "nul\x00name"} <= declared
    assert {type(c.payload) for c in all_cases if not c.valid and c.field == "(root)"} >= {type(None), list, str}
    assert any(c.valid and c.payload == {} and c.recorded == {} for c in all_cases)
    assert any(c.field and "/" in c.field for c in all_cases)


# ---------------------------------------------------------- faulty parsers


def _normalise(schema: Any, value: Any, *, drop: bool = True, defaults: bool = True,
               has: Callable[[dict, str], bool] = lambda value, name: name in value,
               get: Callable[[dict, str], Any] = lambda value, name: value[name]) -> Any:
    """spec/parsing.py's normalisation with its rules switchable, to seed faults."""
    again = dict(drop=drop, defaults=defaults, has=has, get=get)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_normalise(schema["items"], item, **again) for item in value]
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties")
    if isinstance(properties, dict):
        if drop and "additionalProperties" not in schema:
            for name in [key for key in value if key not in properties]:
                del value[name]
        for name, sub in properties.items():
            if has(value, name):
                value[name] = _normalise(sub, get(value, name), **again)
            elif defaults and isinstance(sub, dict) and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
    return value


def _seeded(**rules: Any) -> Callable[[dict, Any], Outcome]:
    """Validation by spec/parsing.py, normalisation by `_normalise(**rules)`."""
    def parse_with_fault(schema: dict, payload: Any) -> Outcome:
        outcome = loomcheck_parse(schema, payload)
        return outcome if outcome[0] == "invalid" else ("ok", _normalise(schema, copy.deepcopy(payload), **rules))
    return parse_with_fault


def _unnamed_refusal(schema: dict, payload: Any) -> Outcome:
    outcome = loomcheck_parse(schema, payload)
    return ("invalid", "the payload does not match the gate's schema") if outcome[0] == "invalid" else outcome


def _prototype_chain(schema: dict, payload: Any) -> Outcome:
    """JavaScript's `out[key] = value` copy: a `__proto__` key becomes the prototype,
    so what it carries reads as the object's own fields."""
    if isinstance(payload, dict) and isinstance(payload.get("__proto__"), dict):
        payload = {**payload["__proto__"], **{k: v for k, v in payload.items() if k != "__proto__"}}
    return loomcheck_parse(schema, payload)


class _Record:
    pass


def _attribute_record(schema: dict, payload: Any) -> Outcome:
    """Turns the payload into an attribute object first: `__class__` raises, `__dict__` replaces the lot."""
    if isinstance(payload, dict):
        record = _Record()
        for key, value in payload.items():
            setattr(record, key, value)
        payload = dict(vars(record))
    return loomcheck_parse(schema, payload)


GATE = "a closed gate contract: required fields and their types"
DEFAULTS = "defaults"
HOSTILE_PAYLOAD = "hostile keys in a payload against a closed object"
HOSTILE_DECLARED = "hostile names declared as properties"

SEEDED: list[tuple[str, Callable[[dict, Any], Outcome], list[tuple[str, str]]]] = [
    ("keeps-undeclared-keys", _seeded(drop=False), [
        (GATE, "an undeclared key is dropped from what is recorded (ADR 0077's sharp edge)"),
        ("a gate contract that forgets viewDigest (ADR 0117)",
         "the echoed digest is dropped from the durable log: the documented consequence of a closed contract"),
        (HOSTILE_PAYLOAD, "__proto__ is dropped, and what it carries reaches no declared field"),
    ]),
    ("ignores-defaults", _seeded(defaults=False), [
        (DEFAULTS, "every absent top-level property gets its default; absent objects and arrays stay absent"),
        (DEFAULTS, "every array item gets its defaults and loses its undeclared keys"),
        (HOSTILE_DECLARED, "every declared hostile name gets its default as an ordinary key"),
    ]),
    ("refuses-without-naming", _unnamed_refusal, [
        (GATE, "a string where a boolean is declared is refused at that field"),
        (GATE, "a missing required field is refused and named"),
        ("a nested decision object", "a nested field of the wrong type is refused at its path"),
    ]),
    ("getattr-lookup", _seeded(has=lambda value, name: name in value or hasattr(value, name),
                               get=lambda value, name: value[name] if name in value else getattr(value, name)), [
        (HOSTILE_DECLARED, "every declared hostile name gets its default as an ordinary key"),
        ("properties named like JSON Schema keywords", "defaults of keyword-named properties are filled as ordinary keys"),
    ]),
    ("prototype-chain-copy", _prototype_chain, [
        (HOSTILE_PAYLOAD, "__proto__ carrying approved does not satisfy the required approved"),
        (HOSTILE_PAYLOAD, "__proto__ is dropped, and what it carries reaches no declared field"),
    ]),
    ("attribute-record", _attribute_record, [
        (HOSTILE_PAYLOAD, "__class__ is dropped"),
        (HOSTILE_PAYLOAD, "__dict__ is dropped, and what it carries reaches no declared field"),
    ]),
]


@pytest.mark.parametrize("faulty, caught_by", [(f, c) for _, f, c in SEEDED], ids=[name for name, _, _ in SEEDED])
def test_the_battery_catches_a_faulty_parser(faulty: Callable[[dict, Any], Outcome],
                                             caught_by: list[tuple[str, str]]) -> None:
    failures = check(faulty)
    failed = {(f.case.group, f.case.description) for f in failures}
    assert set(caught_by) <= failed, "\n".join(map(str, failures))
    assert all(isinstance(f, Failure) and f.explanation and "\n" not in f.explanation for f in failures)


def test_a_crash_on_a_hostile_key_fails_that_case_and_is_explained() -> None:
    failures = {f.case.description: f.explanation for f in check(_attribute_record) if f.case.group == HOSTILE_PAYLOAD}
    assert failures["__class__ is dropped"].startswith("raised TypeError: ")
    assert failures["__dict__ is dropped, and what it carries reaches no declared field"].startswith("recorded the wrong value")


# ------------------------------------------------------------- the runner


def test_exceptions_never_escape() -> None:
    def boom(schema: dict, payload: Any) -> Outcome:
        raise RuntimeError("boom\nsecond line")

    failures = check(boom)
    assert len(failures) == len(cases())
    assert {f.explanation for f in failures} == {"raised RuntimeError: boom second line"}


@pytest.mark.parametrize("answer", [None, ("ok",), ["ok", {}], ("yes", {}), ("invalid", None), ({"ok"}, 1)],
                         ids=["none", "one-tuple", "list", "unknown-kind", "message-not-a-string", "unhashable-kind"])
def test_malformed_answers_fail_every_case(answer: Any) -> None:
    assert len(check(lambda schema, payload: answer)) == len(cases())


def test_a_parser_that_strips_the_payload_in_place_fails() -> None:
    def in_place(schema: dict, payload: Any) -> Outcome:
        outcome = loomcheck_parse(schema, payload)
        if outcome[0] == "ok" and isinstance(payload, dict):
            payload.clear()
            payload.update(outcome[1])
            return ("ok", payload)
        return outcome

    explanations = {f.case.description: f.explanation for f in check(in_place)}
    assert explanations["an undeclared key is dropped from what is recorded (ADR 0077's sharp edge)"].startswith(
        "changed the payload it was given")


def test_the_kit_base_class_must_be_overridden() -> None:
    case = cases()[0]
    assert "NotImplementedError" in (verdict(case, ResumeSchemaConformance().parse) or "")


@pytest.mark.parametrize("actual, expected, same", [
    (True, 1, False), (1, True, False), (1, 1.0, False), (0, False, False), (None, 0, False),
    ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, True), ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False), ([1, 2], [2, 1], False), ((1,), [1], False), ("1", 1, False),
])
def test_equality_is_json_kind_aware(actual: Any, expected: Any, same: bool) -> None:
    assert (json_difference(actual, expected) is None) is same


def test_invalid_cases_name_what_they_must() -> None:
    by_description = {(c.group, c.description): c for c in cases()}
    nested = by_description[("a nested decision object", "a nested field of the wrong type is refused at its path")]
    assert (nested.field, nested.must_name()) == ("decision/approved", ["decision"])
    missing = by_description[(GATE, "a missing required field is refused and named")]
    assert (missing.field, missing.must_name()) == ("(root)", ["approved"])
    assert isinstance(missing, Case)
