"""What "the parsed value" means for a JSON Schema carried as data (ADR 0077: the PARSED value
is what runs and is recorded): validate, fill in defaults, drop undeclared keys unless the
schema keeps the object open. Pure Python over plain JSON values: docs/spec-data.md, "The
parsed value"."""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError


@dataclass(frozen=True)
class Parsed:
    value: Any


@dataclass(frozen=True)
class Invalid:
    field: str
    message: str


def _key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


@lru_cache(maxsize=1024)
def _check(key: str) -> str | None:
    try:
        Draft202012Validator.check_schema(json.loads(key))
    except SchemaError as exc:
        return exc.message
    return None


@lru_cache(maxsize=1024)
def _validator(key: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(key))


def check_schema(schema: dict[str, Any]) -> str | None:
    """None when the schema is a valid JSON Schema, else why not. (Checking against
    the metaschema is costly and flows repeat their schemas: memoised by content.)"""
    return _check(_key(schema))


def parse(schema: dict[str, Any], value: Any) -> Parsed | Invalid:
    validator = _validator(_key(schema))
    errors = sorted(validator.iter_errors(value), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        field = "/".join(str(p) for p in first.absolute_path) or "(root)"
        return Invalid(field=field, message=first.message)
    return Parsed(_normalise(schema, copy.deepcopy(value)))


def _normalise(schema: Any, value: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_normalise(schema["items"], item) for item in value]
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties")
    if isinstance(properties, dict):
        patterns = schema.get("patternProperties") if isinstance(schema.get("patternProperties"), dict) else {}
        undeclared = [key for key in value if key not in properties and not _matches(patterns, key)]
        additional = schema.get("additionalProperties")
        if "additionalProperties" not in schema:
            for name in undeclared:
                del value[name]  # ADR 0077's sharp edge: undeclared keys are not persisted
        elif isinstance(additional, dict):
            for name in undeclared:  # kept open with a schema: parsed by that schema
                value[name] = _normalise(additional, value[name])
        for name, sub in properties.items():
            if name in value:
                value[name] = _normalise(sub, value[name])
            elif isinstance(sub, dict) and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
    return value


def _matches(patterns: dict[str, Any], key: str) -> bool:
    """A key patternProperties declares (JSON Schema: an unanchored regex search)."""
    return any(re.search(pattern, key) for pattern in patterns)
