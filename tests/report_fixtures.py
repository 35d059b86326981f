"""Reports and manifests built from the model for the report tests: a tiny kernel's records,
fast, with no run behind them."""

from __future__ import annotations

from pathlib import Path

from loomcheck.reports.model import Implementation, InvariantRecord, Report
from loomcheck.run.manifest import ExpectedEntry, Manifest
from loomcheck.spec.catalogue import load_catalogue

GATE = "gate.i-receives-entry-i"
BEYOND = "gate.beyond-answers-parks"
LEGACY = "gate.legacy-single-payload"
FOLD = "fold.resume-payloads-ordered"
ANSWER = "answer.one-suspend-point"


def record_of(invariant_id: str, status: str = "pass", **fields: object) -> InvariantRecord:
    inv = load_catalogue().get(invariant_id)
    return InvariantRecord(id=inv.id, adr=inv.adr, decision=inv.decision, title=inv.title, kind=inv.kind,
                           statement=inv.statement, checks=list(inv.checks), status=status, examples=10,
                           **fields)  # type: ignore[arg-type]


def report_of(*records: InvariantRecord, complete: bool = True, name: str = "tiny-kernel", **fields: object) -> Report:
    report = Report(suiteVersion="0.1.0", implementation=Implementation(spec="python:tiny:make", name=name,
                                                                        version="0.3.0", eventSchema="1.20.0"),
                    profile="ci", started="2026-01-01T00:00:00+00:00", complete=complete, results=list(records),
                    **fields)  # type: ignore[arg-type]
    report.summarise()
    return report


def failing_record(invariant_id: str, message: str = "gate 2 received entry 1",
             counterexample: str | None = "loomcheck-report/counterexamples/x.json") -> InvariantRecord:
    path = counterexample.replace("x.json", f"{invariant_id}.json") if counterexample else None
    return record_of(invariant_id, "fail", message=message, counterexample=path, counterexampleEvents=4,
                   counterexampleOperations=3)


def manifest_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "loomcheck.toml"
    path.write_text(text, encoding="utf-8")
    return path


def expecting(*entries: tuple[str, str, str]) -> Manifest:
    return Manifest(expected=[ExpectedEntry(invariant=i, status=s, reason=r) for i, s, r in entries])  # type: ignore[arg-type]
