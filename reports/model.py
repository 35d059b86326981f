"""The report: one record per invariant, a header saying what was run against
what, and findings the run could not attribute to one invariant. Its JSON
Schema is spec/schemas/report.schema.json."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

# "hazard" / "residual" / "not-reproduced" are for documented hazards and
# documented residuals only: whether the demonstration shows the hazard (or the
# residual an ADR admits) on this implementation. None of them is a pass.
Status = Literal["pass", "fail", "not-applicable", "error", "hazard", "residual", "not-reproduced"]
FORMAT = "loomcheck-report/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _writable(text: str) -> str:
    """A message may quote a hostile name with a lone surrogate, which no UTF-8 file can
    hold: it is kept as its escape, so a report is always written."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


Text = Annotated[str, AfterValidator(_writable)]


class Implementation(_Model):
    spec: str
    name: str = "unknown"
    version: str = "unknown"
    eventSchema: str | None = None
    features: list[str] = []
    transport: Literal["in-process", "stdio"] = "in-process"
    command: str | None = Field(default=None, description="for stdio: the command line that started the implementation")


class Expected(_Model):
    """What an implementation's manifest says about one invariant it is known to fail."""

    status: Literal["fail", "error"]
    reason: str
    link: str | None = None


# How the run compares with the manifest: the failure it expects ("expected-failure",
# no longer a reason to exit 1), a pass where it expects a failure ("unexpected-pass":
# the manifest is stale), or fail where it expects error or the reverse
# ("still-failing-differently": counted like any failure, since something changed).
ManifestVerdict = Literal["expected-failure", "unexpected-pass", "still-failing-differently"]


class EvidenceModel(_Model):
    seq: int
    execution: Text | None = None
    type: Text = Field(description="empty when the log does not hold the event")
    payload: Text
    role: Text = Field(description="what the event is to the argument")
    before: Text = Field(description="the execution just before the event, walked from the log")


class ExplanationModel(_Model):
    """Why the counterexample violates the invariant (properties/explain.py)."""

    adr: str
    decision: str
    claim: Text = Field(description="the checker's own sentences, citing events by sequence number")
    evidence: list[EvidenceModel] = []
    expected: Text | None = Field(default=None, description="what the decision requires instead")
    rule: Text | None = Field(default=None, description="the decision's own words")
    catalogueEntry: str
    text: Text = Field(description="the whole explanation as the terminal prints it")


class InvariantRecord(_Model):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)  # the runner fills records in as it goes
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
    message: Text | None = None
    counterexample: str | None = Field(default=None, description="path of a replayable regression log")
    counterexampleEvents: int | None = None
    counterexampleOperations: int | None = None
    explanation: ExplanationModel | None = Field(default=None, description="for a failure: why, from the counterexample")
    expected: Expected | None = Field(default=None, description="the manifest's entry for this invariant, if any")
    manifest: ManifestVerdict | None = Field(default=None, description="how the status compares with `expected`")
    profile: str | None = Field(default=None, description="the choice of spec/profiles.toml the check rests on: a "
                                                          "failure is a profile disagreement, not an ADR violation")

    @property
    def disagrees(self) -> bool:
        """A failure of a check that rests on a profile choice: reported apart from conformance."""
        return self.profile is not None and self.status == "fail"
    rootCause: str | None = Field(default=None, description="for a failure: the invariant heading the root cause it is "
                                                            "reported under (its own id when it heads one)")

    @property
    def excused(self) -> bool:
        """A failure the manifest expects, exactly as it expects it."""
        return self.manifest == "expected-failure"


class CorpusRecord(_Model):
    """How many cases a fixed corpus ran, per category, and how many violated an invariant."""

    name: str
    cases: int = 0
    perCategory: dict[str, int] = {}
    violations: int = 0
    demonstrations: int = Field(default=0, description="documented hazards or residuals the corpus showed (not violations)")
    invariants: list[str] = Field(default=[], description="the invariants the corpus judged")


class ExplorationRecord(_Model):
    """One scenario of the bounded exhaustive explorer (explore/): how far it got."""

    scenario: str
    purpose: str = ""
    depthTarget: int
    depthComplete: int = Field(description="every history of at most this many operations was applied and judged")
    status: Literal["exhausted", "bounded", "unknown", "failed"] = Field(
        description="exhausted: no new state at some depth, so histories of every length are covered; bounded: "
                    "complete to the target depth; unknown: the budget ran out, histories beyond depthComplete "
                    "were not all checked; failed: every invariant it judged failed, so it stopped")
    transitions: int = Field(description="operations applied to a distinct state and judged")
    distinctStates: int
    replayedOperations: int = Field(description="operations re-executed to restore states (a driver cannot fork)")
    seconds: float
    invariants: list[str] = []
    failures: list[str] = Field(default=[], description="invariants it found violated")


class Finding(_Model):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # "incomplete": a check ran out of its budget (the explorer), so what it did not finish is unknown.
    kind: Literal["implementation-error", "suite-error", "spec-error", "incomplete"]
    message: Text
    counterexample: str | None = None
    # Free text (with a pattern) rather than a Literal: transports add causes, and an
    # older reader should still load a newer report.
    reason: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9-]*$",
                               description="a short machine-readable cause: hang, crash, garbage, wrong-id, oversized, "
                                           "flood, lying-hello, invalid-message, deadline, ...")


class CoverageRow(_Model):
    """One coverage item of the run (run/coverage.py): a refusal reason, a
    scanner verdict, a row of ADR 0104's recording table or an emit-guard rule, and the
    layers that reached it. An applicable row no layer reached is also a suite-error Finding."""

    kind: Literal["refusal", "verdict", "recording-row", "emit-rule"]
    name: str
    adr: str | None = None
    decision: str
    reachedBy: list[str] = Field(default=[], description="layers, e.g. stateful, explorer, symbolic, regressions, corpus")
    applicable: bool = Field(default=True, description="the implementation declares every feature the item needs")
    why: str | None = Field(default=None, description="why it is not applicable, or how it is reached when it was not")


class RootCause(_Model):
    """One counterexample (or regression-log difference), reported once: headed by the invariant whose
    decision it most directly breaks, with the other failing invariants it violates (run/rootcauses.py)."""

    head: str
    adr: str
    decision: str
    title: str
    message: Text | None = None
    counterexample: str | None = Field(default=None, description="path of the replayable counterexample")
    counterexampleOperations: int | None = None
    alsoViolated: list[str] = Field(default=[], description="the other failing invariants this counterexample violates")
    sameCause: list[str] = Field(default=[], description="other failing invariants whose own counterexample also "
                                                         "violates the head")


class Summary(_Model):
    passed: int = 0
    failed: int = 0
    notApplicable: int = 0
    errors: int = 0
    hazards: int = 0
    expectedFailures: int = Field(default=0, description="failures and errors the manifest expects (counted in failed/errors too)")
    profileDisagreements: int = Field(default=0, description="failures of checks resting on a profile choice "
                                                             "(spec/profiles.toml), not counted in failed")
    rootCauses: int = Field(default=0, description="distinct root causes of the failures (one counterexample each)")


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
    stopped: str | None = Field(default=None, description="why a partial run stopped, e.g. restart budget spent")
    summary: Summary = Summary()
    results: list[InvariantRecord] = []
    corpora: list[CorpusRecord] = []
    exploration: list[ExplorationRecord] = Field(default=[], description="the bounded exhaustive explorer, per scenario")
    findings: list[Finding] = []
    unexpectedPasses: list[str] = Field(default=[], description="invariants the manifest expects to fail that passed")
    coverage: list[CoverageRow] = Field(default=[], description="what the run reached (run/coverage.py); empty in older reports")
    profileChecks: Literal["advisory", "strict"] = Field(
        default="advisory", description="advisory: a profile disagreement never changes the exit status or the "
                                        "conformance verdict; strict: it counts as a violation")
    rootCauses: list[RootCause] = Field(default=[], description="the failures grouped by counterexample, most direct first")

    def summarise(self) -> None:
        counts = {"pass": 0, "fail": 0, "not-applicable": 0, "error": 0, "hazard": 0, "residual": 0,
                  "not-reproduced": 0}
        disagreements = 0
        for record in self.results:
            if record.disagrees:
                disagreements += 1
                continue
            counts[record.status] += 1
        self.summary = Summary(passed=counts["pass"], failed=counts["fail"], profileDisagreements=disagreements,
                               notApplicable=counts["not-applicable"], errors=counts["error"],
                               hazards=counts["hazard"] + counts["residual"] + counts["not-reproduced"],
                               expectedFailures=sum(r.excused for r in self.results),
                               rootCauses=len(self.rootCauses))

    def exit_code(self, strict: bool = False) -> int:
        """0 all pass; 1 a violation; 2 incomplete or an error (documented in the README).
        A profile disagreement is a violation only under `profileChecks == "strict"`.
        A failure or error the manifest expects counts as neither; an unexpected pass
        is a violation only when `strict` (the manifest is then held to the run)."""
        if any(r.status == "fail" and not r.excused and (not r.disagrees or self.profileChecks == "strict")
               for r in self.results):
            return 1
        if strict and self.unexpectedPasses:
            return 1
        if not self.complete or self.findings or any(r.status == "error" and not r.excused for r in self.results):
            return 2
        return 0
