"""The report: one record per invariant, a header saying what was run against
what, and findings the run could not attribute to one invariant. Its JSON
Schema is spec/schemas/report.schema.json."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# "hazard" / "residual" / "not-reproduced" are for documented hazards and
# documented residuals only: whether the demonstration shows the hazard (or the
# residual an ADR admits) on this implementation. None of them is a pass.
Status = Literal["pass", "fail", "not-applicable", "error", "hazard", "residual", "not-reproduced"]
FORMAT = "loomcheck-report/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Implementation(_Model):
    spec: str
    name: str = "unknown"
    version: str = "unknown"
    eventSchema: str | None = None
    features: list[str] = []


class InvariantRecord(_Model):
    id: str
    adr: str
    decision: str
    title: str
    kind: str
    statement: str
    checks: list[str]
    status: Status
    examples: int = Field(default=0, description="examples run, shrinking included")
    examplesToFailure: int | None = Field(default=None, description="for a failure: the example it was first seen in, before shrinking")
    message: str | None = None
    counterexample: str | None = Field(default=None, description="path of a replayable regression log")
    counterexampleEvents: int | None = None
    counterexampleOperations: int | None = None


class CorpusRecord(_Model):
    """How many cases a fixed corpus ran, per category, and how many violated an invariant."""

    name: str
    cases: int = 0
    perCategory: dict[str, int] = {}
    violations: int = 0
    demonstrations: int = Field(default=0, description="documented hazards or residuals the corpus showed (not violations)")
    invariants: list[str] = Field(default=[], description="the invariants the corpus judged")


class Finding(_Model):
    kind: Literal["implementation-error", "suite-error", "spec-error"]
    message: str
    counterexample: str | None = None


class Summary(_Model):
    passed: int = 0
    failed: int = 0
    notApplicable: int = 0
    errors: int = 0
    hazards: int = 0


class Report(_Model):
    format: Literal["loomcheck-report/1"] = FORMAT
    suite: str = "loomcheck"
    suiteVersion: str
    implementation: Implementation
    profile: str
    seed: int | None = None
    started: str
    wallSeconds: float = 0.0
    stateMachineSteps: int = 0
    complete: bool = False
    summary: Summary = Summary()
    results: list[InvariantRecord] = []
    corpora: list[CorpusRecord] = []
    findings: list[Finding] = []

    def summarise(self) -> None:
        counts = {"pass": 0, "fail": 0, "not-applicable": 0, "error": 0, "hazard": 0, "residual": 0,
                  "not-reproduced": 0}
        for record in self.results:
            counts[record.status] += 1
        self.summary = Summary(passed=counts["pass"], failed=counts["fail"],
                               notApplicable=counts["not-applicable"], errors=counts["error"],
                               hazards=counts["hazard"] + counts["residual"] + counts["not-reproduced"])

    def exit_code(self) -> int:
        """0 all pass; 1 a violation; 2 incomplete or an error (documented in the README)."""
        if any(r.status == "fail" for r in self.results):
            return 1
        if not self.complete or self.findings or any(r.status == "error" for r in self.results):
            return 2
        return 0
