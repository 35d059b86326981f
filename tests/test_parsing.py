"""What "the parsed value" means (ADR 0077), pinned case by case."""

from __future__ import annotations

from loomcheck.spec.parsing import Invalid, Parsed, parse

CLOSED = {"type": "object", "properties": {"approved": {"type": "boolean"}, "by": {"type": "string", "default": "?"}},
          "required": ["approved"]}


def test_a_closed_object_drops_undeclared_keys_and_fills_defaults() -> None:
    assert parse(CLOSED, {"approved": True, "envelope": {"id": 1}}) == Parsed({"approved": True, "by": "?"})


def test_additional_properties_true_keeps_them() -> None:
    open_schema = {**CLOSED, "additionalProperties": True}
    assert parse(open_schema, {"approved": True, "envelope": {"id": 1}}) == Parsed(
        {"approved": True, "envelope": {"id": 1}, "by": "?"})


def test_additional_properties_false_refuses_them() -> None:
    strict = {**CLOSED, "additionalProperties": False}
    assert isinstance(parse(strict, {"approved": True, "envelope": 1}), Invalid)


def test_nested_objects_and_arrays_are_parsed_too() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": CLOSED}}}
    assert parse(schema, {"items": [{"approved": False, "x": 1}]}) == Parsed({"items": [{"approved": False, "by": "?"}]})


def test_the_offending_field_is_named() -> None:
    result = parse(CLOSED, {"approved": "yes"})
    assert isinstance(result, Invalid) and result.field == "approved"
    missing = parse(CLOSED, {"by": "ann"})
    assert isinstance(missing, Invalid) and "approved" in missing.message


def test_parsing_never_mutates_the_input() -> None:
    payload = {"approved": True, "envelope": 1}
    parse(CLOSED, payload)
    assert payload == {"approved": True, "envelope": 1}


def test_schemas_without_properties_keep_the_value_as_is() -> None:
    assert parse({"type": "object"}, {"anything": [1]}) == Parsed({"anything": [1]})
    assert parse({}, 5) == Parsed(5)


def test_a_counterexample_with_a_lone_surrogate_is_written() -> None:
    """The hostile-names corpus names gates with lone surrogates; a counterexample holding
    one must still be writable as UTF-8 and read back unchanged (it was a suite error)."""
    import json
    from pathlib import Path
    import tempfile

    from loomcheck.spec.regressions import RegressionLog, dump_regression, load_regression

    log = RegressionLog.model_validate({
        "name": "surrogate", "description": "a gate named with a lone surrogate", "adr": "0077",
        "invariants": ["fold.key-safety"], "origin": "counterexample",
        "operations": [{"op": "define", "flow": "f", "program": {"body": [{"op": "suspend", "on": "\ud800"}]}},
                       {"op": "start", "execution": "x", "flow": "f", "input": None},
                       {"op": "resume", "execution": "x", "type": "\ud800", "payload": "\udfff"}]})
    text = dump_regression(log)
    text.encode("utf-8")  # what writing the file does
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.json"
        path.write_text(text, encoding="utf-8")
        again = load_regression(path)
    assert json.loads(text)["operations"][2]["type"] == "\ud800"
    assert again.operations[2].model_dump()["type"] == "\ud800"
