"""What "the parsed value" means for a JSON Schema carried as data (ADR 0077:
the PARSED value is what runs and is recorded).

Parsing = validate against the schema (JSON Schema 2020-12), then fill in the
`default` of every absent property of every object the schema describes with
`properties` (inside `items` too). `$ref`, `allOf`, `anyOf` and `prefixItems`
are validated but not searched for defaults. Pure Python over plain JSON values (no pydantic), so symbolic
tools can analyse it.
"""

from __future__ import annotations

import copy
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


def check_schema(schema: dict[str, Any]) -> str | None:
    """None when the schema is a valid JSON Schema, else why not."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return exc.message
    return None


def parse(schema: dict[str, Any], value: Any) -> Parsed | Invalid:
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(value), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        field = "/".join(str(p) for p in first.absolute_path) or "(root)"
        return Invalid(field=field, message=first.message)
    return Parsed(_with_defaults(schema, copy.deepcopy(value)))


def _with_defaults(schema: Any, value: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_with_defaults(schema["items"], item) for item in value]
    if not isinstance(value, dict):
        return value
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in properties.items():
            if name in value:
                value[name] = _with_defaults(sub, value[name])
            elif isinstance(sub, dict) and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
    return value
