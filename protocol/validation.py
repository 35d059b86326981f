"""`--validate-protocol`: every message, both ways, against the published JSON
Schemas (spec/schemas/protocol/). The schemas are read from the installed
package, so what is checked is exactly what a third party reads."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from loomcheck.contract.boundary import RunAborted
from loomcheck.spec.files import SPEC_ROOT


def _load(name: str) -> dict[str, Any]:
    return json.loads((SPEC_ROOT / "schemas" / "protocol" / name).read_text(encoding="utf-8"))


class ProtocolValidator:
    def __init__(self) -> None:
        self.requests = Draft202012Validator(_load("request.schema.json"))
        self.responses = Draft202012Validator(_load("response.schema.json"))
        results = _load("results.schema.json")
        self.results = {op: Draft202012Validator({**schema, "$defs": results.get("$defs", {})})
                        for op, schema in results["properties"].items()}

    def request(self, message: dict[str, Any]) -> None:
        """A request the harness wrote that its own schema rejects is a defect of the suite."""
        error = _first(self.requests, message)
        if error:
            raise RunAborted("suite", f"loomcheck wrote a request its schema rejects: {error}")

    def response(self, message: dict[str, Any], op: str) -> str | None:
        """Why a response is not what the schema allows, or None."""
        error = _first(self.responses, message)
        if error:
            return f"response.schema.json: {error}"
        if "result" in message and op in self.results:
            error = _first(self.results[op], message["result"])
            if error:
                return f"results.schema.json#/properties/{op}: {error}"
        return None


def _first(validator: Draft202012Validator, instance: Any) -> str | None:
    error = next(iter(validator.iter_errors(instance)), None)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(message)"
    return f"at {where}: {error.message[:300]}"
