"""The reference's transform registry (spec/transforms.py): each built-in is a
pure function of the folded input (and, for `parse`, the target flow's
inputSchema). A transform that raises, or returns NOTHING, refuses the
migration (ADR 0056, decision D3)."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from loomcheck.reference.errors import StateMigrationError
from loomcheck.reference.events import copy_json
from loomcheck.spec.parsing import Invalid, parse
from loomcheck.spec.transforms import argument_problem

JSON = Any


class _Nothing:
    """JavaScript's undefined: what a transform returns when it returns nothing."""

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING = _Nothing()


class TransformRaised(Exception):
    pass


def _object(value: JSON) -> dict[str, JSON]:
    if not isinstance(value, dict):
        raise TransformRaised(f"the input is {type(value).__name__}, not an object")
    return dict(value)


def _rename(value: JSON, spec: Mapping[str, JSON], schema: JSON) -> JSON:
    moved = _object(value)
    if spec["from"] in moved:
        moved[spec["to"]] = moved.pop(spec["from"])
    return moved


def _default(value: JSON, spec: Mapping[str, JSON], schema: JSON) -> JSON:
    filled = _object(value)
    filled.setdefault(spec["field"], copy_json(spec.get("value")))
    return filled


def _wrap(value: JSON, spec: Mapping[str, JSON], schema: JSON) -> JSON:
    return {spec["key"]: value}


def _parse(value: JSON, spec: Mapping[str, JSON], schema: JSON) -> JSON:
    if not isinstance(schema, dict):
        raise TransformRaised("the target flow declares no inputSchema to parse with")
    parsed = parse(schema, value)
    if isinstance(parsed, Invalid):
        raise TransformRaised(f"field {parsed.field}: {parsed.message}")
    return parsed.value


def _fail(value: JSON, spec: Mapping[str, JSON], schema: JSON) -> JSON:
    raise TransformRaised(str(spec["message"]))


def _nothing(value: JSON, spec: Mapping[str, JSON], schema: JSON) -> JSON:
    return NOTHING


REGISTRY: Mapping[str, Callable[[JSON, Mapping[str, JSON], JSON], JSON]] = {
    "rename": _rename, "default": _default, "wrap": _wrap, "parse": _parse, "fail": _fail, "nothing": _nothing,
}


def check_spec(spec: JSON) -> Callable[[JSON, Mapping[str, JSON], JSON], JSON]:
    """The registered function a transformState names, or StateMigrationError
    (unknown-transform). Own names only: `__proto__` is an unknown transform."""
    problem = argument_problem(spec)
    if problem is not None:
        raise StateMigrationError("unknown-transform", problem)
    return REGISTRY[spec["name"]]


def apply_transform(spec: JSON, value: JSON, target_schema: JSON) -> JSON:
    """The outcome to record as migratedInput, or StateMigrationError (ADR 0056 D3)."""
    function = check_spec(spec)
    try:
        outcome = function(copy_json(value), {"message": "the transform raised", **spec}, target_schema)
    except TransformRaised as raised:  # ADR 0056 D3: a failing transform refuses, nothing appended
        raise StateMigrationError("transform-failed", f"transformState {spec['name']!r} raised: {raised}") from None
    if outcome is NOTHING:  # ADR 0056 D3: one returning nothing too
        raise StateMigrationError("transform-returned-nothing",
                                  f"transformState {spec['name']!r} returned nothing; the migration needs an input")
    return outcome
