"""The published JSON Schemas, generated from the pydantic models that are the
single source of truth, and committed under spec/schemas/ for other languages.
`python -m loomcheck.reports.schemas` rewrites them (and spec/catalogue.json);
a test fails when a committed file is stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from loomcheck.spec.catalogue import Catalogue, export_json, load_catalogue
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.regressions import RegressionLog

BASE = "https://loomcheck.invalid/schemas/"


def _schema(model: type[BaseModel], name: str, title: str) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE + name, "title": title, **schema}


def generated() -> dict[str, str]:
    """File name under spec/ -> its text."""
    from loomcheck.fleet.corpus import Corpus
    from loomcheck.fuzz import tampering_vectors
    from loomcheck.reports.model import Report

    schemas = {
        "schemas/flow-program.schema.json": _schema(FlowProgram, "flow-program.schema.json", "loomcheck flow program (loomcheck-flow/1)"),
        "schemas/regression-log.schema.json": _schema(RegressionLog, "regression-log.schema.json", "loomcheck regression log (loomcheck-regression/1)"),
        "schemas/report.schema.json": _schema(Report, "report.schema.json", "loomcheck report (loomcheck-report/1)"),
        "schemas/catalogue.schema.json": _schema(Catalogue, "catalogue.schema.json", "loomcheck invariant catalogue"),
        "schemas/fleet-corpus.schema.json": _schema(Corpus, "fleet-corpus.schema.json", "loomcheck fleet corpus (loomcheck.fleet/1)"),
    }
    schemas.update(protocol_schemas())
    files = {name: json.dumps(schema, indent=2, ensure_ascii=False) + "\n" for name, schema in schemas.items()}
    files["catalogue.json"] = export_json(load_catalogue())
    files["vectors/tampered-approvals.json"] = tampering_vectors.text()
    return files


def protocol_schemas() -> dict[str, dict[str, Any]]:
    """The driver protocol's messages (docs/protocol.md), one file per direction, and the
    result each request's op returns."""
    from pydantic import TypeAdapter

    from loomcheck.protocol.messages import RESULTS, Request, Response

    def root(model: Any, name: str, title: str) -> dict[str, Any]:
        schema = TypeAdapter(model).json_schema() if not isinstance(model, type) or not issubclass(model, BaseModel) \
            else model.model_json_schema()
        schema.pop("title", None)
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE + name, "title": title, **schema}

    results: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for op, kind in RESULTS.items():
        schema = {"type": "null"} if kind is None else TypeAdapter(kind).json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        schema.pop("title", None)
        results[op] = schema
    return {
        "schemas/protocol/request.schema.json": root(Request, "protocol/request.schema.json", "loomcheck-driver/1 request"),
        "schemas/protocol/response.schema.json": root(Response, "protocol/response.schema.json", "loomcheck-driver/1 response"),
        "schemas/protocol/results.schema.json": {
            "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": BASE + "protocol/results.schema.json",
            "title": "loomcheck-driver/1: the result of each op (by op name)",
            "type": "object", "properties": results, "$defs": defs},
    }


def write_all(spec_dir: Path) -> list[str]:
    written = []
    for name, text in generated().items():
        path = spec_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(name)
    return written


if __name__ == "__main__":
    print("\n".join(write_all(Path(__file__).resolve().parents[1] / "spec")) or "up to date")
