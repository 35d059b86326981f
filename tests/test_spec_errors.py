"""The error messages a broken spec file produces: a catalogue file and a regression
log, each naming the file, the entry and the field at fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loomcheck.spec.catalogue import load_catalogue_from
from loomcheck.spec.errors import SpecError
from loomcheck.spec.regressions import load_regression


# --------------------------------------------------------------------------- broken catalogue files

VALID: dict[str, Any] = {
    "id": "gate.example",
    "adr": "0057",
    "decision": "Decision",
    "since": "1.16.0",
    "kind": "invariant",
    "title": "An example",
    "statement": "An example invariant always holds.",
    "checks": ["stateful"],
}


def entry(**changes: Any) -> str:
    """One [[invariant]] table in TOML; a change to None drops the field."""
    fields = {**VALID, **changes}
    lines = ["[[invariant]]"] + [f"{key} = {json.dumps(value)}" for key, value in fields.items() if value is not None]
    return "\n".join(lines) + "\n\n"


def broken(tmp_path: Path, *entries: str, name: str = "broken.toml") -> str:
    """Write a catalogue file and return the SpecError message it produces."""
    (tmp_path / name).write_text("".join(entries), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_catalogue_from(tmp_path)
    return str(caught.value)


def test_helper_writes_a_valid_file(tmp_path: Path) -> None:
    (tmp_path / "ok.toml").write_text(entry() + entry(id="gate.second"), encoding="utf-8")
    assert load_catalogue_from(tmp_path).ids == ["gate.example", "gate.second"]


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    message = broken(tmp_path, "[[invariant]\nid = ")
    assert "broken.toml" in message
    assert "not valid TOML" in message


# One field wrong in an otherwise valid entry: the message names the file, the entry and the field.
BROKEN_FIELDS = {
    "missing statement": ({"statement": None}, ['invariant #1 ("gate.example")', "field 'statement'", "Field required"]),
    "statement without full stop": ({"statement": "An example invariant always holds"},
                                    ['invariant #1 ("gate.example")', "statement", "full stop"]),
    "unknown check kind": ({"checks": ["stateful", "fuzz"]}, ["field 'checks.1'"]),
    "empty checks": ({"checks": []}, ["field 'checks'"]),
    "unknown feature in requires": ({"requires": ["fold", "time-travel"]}, ["field 'requires.1'"]),
    "extra field": ({"colour": "blue"}, ["field 'colour'", "Extra inputs are not permitted"]),
}


@pytest.mark.parametrize("case", sorted(BROKEN_FIELDS))
def test_a_broken_field_is_named(tmp_path: Path, case: str) -> None:
    change, expected = BROKEN_FIELDS[case]
    message = broken(tmp_path, entry(**change))
    assert "broken.toml" in message
    for words in expected:
        assert words in message


def test_unknown_adr_names_the_field(tmp_path: Path) -> None:
    message = broken(tmp_path, entry(id="gate.first"), entry(adr="0999"))
    assert "broken.toml" in message
    assert 'invariant #2 ("gate.example")' in message
    assert "field 'adr'" in message
    assert "0057" in message  # the allowed values are listed


@pytest.mark.parametrize("bad_id", ["Gate.Bad", "gate", "gate.", "gate..x", "gate x.y", ""])
def test_bad_id_pattern_names_the_field(tmp_path: Path, bad_id: str) -> None:
    message = broken(tmp_path, entry(id=bad_id))
    assert "broken.toml" in message
    assert "invariant #1" in message
    assert "field 'id'" in message
    assert "pattern" in message


def test_misspelt_table_name(tmp_path: Path) -> None:
    message = broken(tmp_path, entry().replace("[[invariant]]", "[[invariants]]"))
    assert "field 'invariant'" in message
    assert "field 'invariants'" in message


def test_same_id_in_two_files_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "a-first.toml").write_text(entry(), encoding="utf-8")
    message = broken(tmp_path, entry(), name="b-second.toml")
    assert "a-first.toml" in message
    assert "b-second.toml" in message
    assert "gate.example" in message


def test_same_id_twice_in_one_file(tmp_path: Path) -> None:
    message = broken(tmp_path, entry(), entry())
    assert message.count("broken.toml") == 2
    assert "gate.example" in message


def test_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as caught:
        load_catalogue_from(tmp_path)
    assert str(tmp_path) in str(caught.value)
    assert "no invariant files" in str(caught.value)
    (tmp_path / "notes.md").write_text("not toml", encoding="utf-8")
    with pytest.raises(SpecError, match="no invariant files"):
        load_catalogue_from(tmp_path)


# --------------------------------------------------------------------------- broken regression logs


def regression(**changes: Any) -> dict[str, Any]:
    log: dict[str, Any] = {
        "format": "loomcheck-regression/1", "name": "example", "description": "d", "adr": "0057",
        "invariants": ["gate.i-receives-entry-i"], "origin": "adr",
        "operations": [{"op": "define", "flow": "f", "program": {"body": []}},
                       {"op": "start", "execution": "x", "flow": "f"}],
    }
    log.update(changes)
    return log


def broken_regression(tmp_path: Path, text: str) -> str:
    path = tmp_path / "broken-log.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_regression(path)
    return str(caught.value)


def test_regression_helper_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(regression()), encoding="utf-8")
    assert load_regression(path).name == "example"


def test_regression_with_bad_json(tmp_path: Path) -> None:
    message = broken_regression(tmp_path, '{"format": "loomcheck-regression/1",')
    assert "broken-log.json" in message
    assert "not valid JSON" in message


def test_regression_with_unknown_op(tmp_path: Path) -> None:
    ops = regression()["operations"] + [{"op": "teleport", "execution": "x"}]
    message = broken_regression(tmp_path, json.dumps(regression(operations=ops)))
    assert "broken-log.json" in message
    assert "operations #3" in message
    assert "teleport" in message


def test_regression_missing_execution(tmp_path: Path) -> None:
    ops = [{"op": "define", "flow": "f", "program": {}}, {"op": "resume", "type": "go1", "payload": 1}]
    message = broken_regression(tmp_path, json.dumps(regression(operations=ops)))
    assert "broken-log.json" in message
    assert "operations #2" in message
    assert "execution" in message
    assert "Field required" in message
