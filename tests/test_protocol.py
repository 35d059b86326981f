"""The driver protocol (docs/protocol.md): what `loomcheck serve` answers, that
the guide's worked exchange is what the schemas allow, that values survive the
wire however deep or odd, and that the reference gives the same report through
both transports, real SIGKILLs included."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loomcheck.cli import main
from loomcheck.contract.driver import Outcome
from loomcheck.corpora.view_digests import nest
from loomcheck.protocol import wire
from loomcheck.protocol.messages import FIELDS, PROTOCOL
from loomcheck.protocol.server import handle
from loomcheck.protocol.validation import ProtocolValidator
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reports.model import Report

ROOT = Path(__file__).resolve().parents[1]
SERVE = "stdio:" + shlex.join([sys.executable, "-m", "loomcheck", "serve"])
FLOW = {"language": "loomcheck-flow/1", "body": [{"op": "suspend", "on": "go"}, {"op": "complete", "output": 1}]}


@pytest.fixture
def reference() -> Any:
    driver = ReferenceDriver(store="memory")
    yield driver
    driver.close()


def ask(driver: Any, message: dict[str, Any], features: frozenset[str] | None = None) -> dict[str, Any]:
    hello = driver.hello()
    return handle(driver, frozenset(hello.features) if features is None else features, message)


def test_hello_names_the_protocol_and_refuses_another(reference: Any) -> None:
    answer = ask(reference, {"id": 1, "op": "hello", "protocol": PROTOCOL})
    assert answer["id"] == 1 and answer["result"]["protocol"] == PROTOCOL
    assert answer["result"]["name"] == "loomcheck-reference"
    other = ask(reference, {"id": 2, "op": "hello", "protocol": "loomcheck-driver/9"})
    assert other["error"]["kind"] == "failed" and other["error"]["definite"] is True


def test_outcomes_refusals_and_reads(reference: Any) -> None:
    assert ask(reference, {"id": 1, "op": "define", "flow": "f", "program": FLOW}) == {"id": 1, "result": {"crashed": False}}
    assert ask(reference, {"id": 2, "op": "start", "execution": "x", "flow": "f", "input": None})["result"] == {"crashed": False}
    refused = ask(reference, {"id": 3, "op": "resume", "execution": "x", "type": "stop", "payload": 1})
    assert refused["error"]["kind"] == "refused" and refused["error"]["definite"] is True
    assert refused["error"]["reason"] == "gate-mismatch" and refused["error"]["error"] == "ResumeRefusedError"
    log = ask(reference, {"id": 4, "op": "read-log", "execution": "x"})["result"]
    assert [e["type"] for e in log] == ["EXECUTION_STARTED", "EXECUTION_SUSPENDED"]
    assert ask(reference, {"id": 5, "op": "read-state", "execution": "x"})["result"]["status"] == "suspended"


def test_undeclared_features_are_unsupported_and_failures_say_whether_they_happened(reference: Any) -> None:
    unsupported = ask(reference, {"id": 1, "op": "recover", "execution": "x"}, features=frozenset())
    assert unsupported["error"] == {"kind": "unsupported", "definite": True, "message": "feature recover is not declared"}

    class Broken(ReferenceDriver):
        def read_log(self, execution_id: str) -> Any:
            raise OSError("disk on fire")

    broken = Broken(store="memory")
    failed = ask(broken, {"id": 2, "op": "read-log", "execution": "x"})
    assert failed["error"]["kind"] == "failed" and failed["error"]["definite"] is False
    assert "disk on fire" in failed["error"]["message"]
    broken.close()
    assert ask(reference, {"id": 3, "op": "teleport"})["error"]["kind"] == "failed"
    assert "start needs" in ask(reference, {"id": 4, "op": "start", "flow": "f"})["error"]["message"]
    assert ask(reference, {"op": "reset"})["id"] == -1


def test_a_driver_returning_a_dict_outcome_is_served_as_an_outcome(reference: Any) -> None:
    class DictOutcomes(ReferenceDriver):
        def start(self, execution_id: str, flow_id: str, input: Any) -> Any:
            return Outcome.refused("FlowDefinitionError", "unknown-flow", "no such flow").to_json()

    driver = DictOutcomes(store="memory")
    answer = ask(driver, {"id": 1, "op": "start", "execution": "x", "flow": "nope", "input": None})
    assert answer["error"]["reason"] == "unknown-flow"
    driver.close()


def test_every_op_of_the_driver_interface_has_a_message_and_a_result_schema() -> None:
    validator = ProtocolValidator()
    assert set(validator.results) == set(FIELDS)


def test_the_worked_exchange_in_the_guide_is_what_the_schemas_allow() -> None:
    """The guide's example is checked like any implementation's messages would be."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    block = re.search(r"## A worked exchange.*?```text\n(.*?)```", text, re.S)
    assert block, "docs/protocol.md lost its worked exchange"
    validator = ProtocolValidator()
    pending: dict[int, str] = {}
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) >= 10
    for line in lines:
        direction, message = line[0], json.loads(line[2:])
        if direction == ">":
            validator.request(message)
            pending[message["id"]] = message["op"]
        else:
            assert validator.response(message, pending.pop(message["id"])) is None, line


def test_schemas_reject_what_the_protocol_forbids() -> None:
    validator = ProtocolValidator()
    refused_maybe = {"id": 1, "error": {"kind": "refused", "definite": False, "error": "E", "reason": "r"}}
    assert validator.response(refused_maybe, "resume") is not None  # a refusal appends nothing: always definite
    both = {"id": 1, "result": None, "error": {"kind": "failed", "definite": True}}
    assert validator.response(both, "reset") is not None
    assert validator.response({"id": 1, "result": [{"type": "X", "payload": 1}]}, "read-log") is not None  # no seq
    assert validator.response({"id": 1, "result": {"crashed": "no"}}, "start") is not None


@pytest.mark.parametrize("value", [nest("array", 100_000, 0), nest("object", 1_025, "leaf"), "\ud800 and \udfff",
                                   {"__proto__": [-0.0, 1e308, 2**63, "é😀"]}],
                         ids=["100000-deep", "1025-deep-objects", "lone-surrogates", "odd-values"])
def test_values_cross_the_wire_unchanged(value: Any) -> None:
    line = wire.dumps({"id": 1, "result": value})
    assert line.isascii() and b"\n" not in line
    # Compared as canonical text: Python's == recurses too, and these are deeper than it goes.
    assert wire.dumps(wire.loads(line)) == line
    if value == "\ud800 and \udfff" or isinstance(value, dict) and "__proto__" in value:
        assert wire.loads(line)["result"] == value


def test_not_json_on_the_wire_is_refused() -> None:
    for text in ("NaN", '{"a": Infinity}', "{'single': 1}"):
        with pytest.raises(ValueError):
            wire.loads(text)


def test_a_kernel_that_is_not_durable_gets_not_applicable(tmp_path: Path) -> None:
    assert main(["run", "--impl", "reference:memory", "--only", "crash.", "--report", str(tmp_path)]) == 0
    report = Report.model_validate_json((tmp_path / "report.json").read_text())
    assert {r.status for r in report.results} == {"not-applicable"}
    assert all("durable" in (r.message or "") for r in report.results)
