"""Explanations: why a counterexample violates its invariant, in a few plain sentences
built from the counterexample itself. A checker's Violation brings its own argument;
this module adds what every explanation shares (the decision, its words, the catalogue
entry, each cited event with its role and the state before it): docs/explanations.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from loomcheck.contract.jsonvalues import show
from loomcheck.contract.logview import IN_DOUBT, Moment, walk
from loomcheck.properties.registry import Violation

JSON = Any
CITED = "cited by the check"  # the role of an event whose checker gave none
LAST = "the last event of the log when the check failed (the check cites no event of its own)"


@dataclass(frozen=True)
class Evidence:
    """One event the argument rests on."""

    seq: int
    execution: str | None
    type: str       # "" when the log does not hold that sequence number
    payload: str    # shown short
    role: str
    before: str     # the execution just before it: "parked on 'go1'", "running, parked at no gate", ...

    def ref(self) -> str:
        return event_ref(self.seq, self.type, self.payload) if self.type else f"#{self.seq}"


@dataclass(frozen=True)
class Explanation:
    invariant: str
    adr: str
    decision: str
    title: str
    claim: str                   # the checker's own sentence(s)
    evidence: tuple[Evidence, ...]
    rule: str | None             # the decision's words (the catalogue's quote)
    expected: str | None         # what the decision says should have happened
    extends: str | None = None   # an extension beyond the decision (spec/profiles.toml), which then says it

    @property
    def where(self) -> str:
        if self.extends is not None:
            return f"ADR {self.adr} {self.decision} as loomcheck extends it ({self.extends})"
        return f"ADR {self.adr} {self.decision}"

    @property
    def anchor(self) -> str:
        return f"docs/invariants.md#{self.invariant}"

    def lines(self) -> list[str]:
        out = [f"{self.invariant} ({self.where}, \"{self.title}\") is violated: {self.claim}"]
        out += [f"  {e.ref()}: {e.role}; just before it the execution was {e.before}." for e in self.evidence]
        if self.expected:
            out.append(f"  What {self.where} requires instead: {self.expected}")
        if self.rule:
            out.append(f"  {self.where}: \"{self.rule}\"")
        out.append(f"  The invariant: {self.anchor}")
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    def to_json(self) -> dict[str, JSON]:
        return {"adr": self.adr, "decision": self.decision, "claim": self.claim,
                "evidence": [{"seq": e.seq, "execution": e.execution, "type": e.type, "payload": e.payload,
                              "role": e.role, "before": e.before} for e in self.evidence],
                "expected": self.expected, "rule": self.rule, "catalogueEntry": self.anchor, "text": self.text()}


def event_ref(seq: int | None, event_type: str, payload: str) -> str:
    """How every explanation names an event: `#5 EXECUTION_RESUMED {}`."""
    return f"#{seq} {event_type} {payload}".rstrip()


def describe(moment: Moment) -> str:
    """The execution as of a moment, in words."""
    if moment.status == "suspended":
        if moment.parked_on == IN_DOUBT:
            step = (moment.condition or {}).get("stepId")
            return f"parked in doubt over step {step!r} (an operator's verdict is due)"
        step = (moment.condition or {}).get("stepId")
        return f"parked on {moment.parked_on!r}" + (f" (human step {step!r})" if isinstance(step, str) else "")
    if moment.status == "running":
        return "running, parked at no gate (crashed or mid-run)"
    if moment.status == "pending":
        return "not yet started"
    return f"{moment.status}, parked at no gate"


def explain(violation: Violation, logs: Mapping[str, list[dict[str, JSON]]],
            snapshots: Mapping[str, dict[str, JSON]] | None = None, catalogue: Any = None) -> Explanation:
    """The explanation of `violation`, its events looked up in `logs` (execution -> log)."""
    if catalogue is None:
        from loomcheck.spec.catalogue import load_catalogue

        catalogue = load_catalogue()
    entry = catalogue.get(violation.invariant) if violation.invariant in set(catalogue.ids) else None
    seqs = [s for s in violation.events if type(s) is int]
    execution = violation.execution if violation.execution in logs else _holder(seqs, logs)
    log = logs.get(execution, []) if execution is not None else []
    moments = {event.get("seq"): moment for event, moment, _ in walk(log, (snapshots or {}).get(execution or ""))}
    by_seq = {event.get("seq"): event for event in log}
    evidence = []
    for position, seq in enumerate(seqs):
        role = violation.roles[position] if position < len(violation.roles) else CITED
        event = by_seq.get(seq)
        moment = moments.get(seq)
        evidence.append(Evidence(seq, execution, str(event.get("type")) if event else "",
                                 show(event.get("payload"), 60) if event else "", role,
                                 describe(moment) if moment is not None else "unknown (not in the log)"))
    if not evidence and log:  # a refusal or a missing event: the log's end is where the argument stands
        last = log[-1]
        moment = moments.get(last.get("seq"))
        evidence.append(Evidence(int(last.get("seq") or 0), execution, str(last.get("type")),
                                 show(last.get("payload"), 60), LAST,
                                 describe(moment) if moment is not None else "unknown"))
    return Explanation(violation.invariant, entry.adr if entry else "?", entry.decision if entry else "?",
                       entry.title if entry else violation.invariant, violation.message, tuple(evidence),
                       (entry.quote or entry.statement) if entry else None, violation.expected,
                       _extension(entry.profile) if entry else None)


def _extension(choice: str | None) -> str | None:
    """The profile choice an invariant rests on when that choice goes beyond the ADRs."""
    from loomcheck.spec.profiles import profile

    return choice if choice is not None and profile().get(choice).kind == "extension" else None


def _holder(seqs: list[int], logs: Mapping[str, list[dict[str, JSON]]]) -> str | None:
    """The one execution whose log holds every cited event (or the only execution)."""
    holders = [x for x, log in logs.items() if set(seqs) <= {e.get("seq") for e in log}]
    if len(holders) == 1:
        return holders[0]
    return next(iter(logs)) if len(logs) == 1 else None


# ADR 0104 D1's table: what resume() and resumeAs() record, by what the execution was:
# (the row as the ADR names it, what is recorded, why).
RECORDING_TABLE = {
    "parked-at-gate": ("parked at a gate (ctx.suspend, or a human step)", "EXECUTION_RESUMED(payload)",
                       "the payload IS that gate's answer"),
    "parked-in-doubt": ("parked in doubt (EffectInDoubtResolved)",
                        "DECISION_RECORDED {decisionId: __loom_indoubt__:<step>:<attempt>, choice: verdict, source: "
                        "\"operator\"}, then EXECUTION_RESUMED(null)", "the verdict answers ONE park, of one attempt of one step"),
    "crashed": ("crashed (running/pending)", "nothing (a recovery leaves EXECUTION_RECOVERED {} alone)",
                "already running; parked at no gate"),
    "terminal": ("terminal (resumeAs onto failed/completed)", "EXECUTION_RESUMED(null)",
                 "re-opens it, so a later crash is recoverable, without answering a gate"),
}


def table_row(key: str) -> str:
    """A row of ADR 0104 D1's table, quoted."""
    was, recorded, why = RECORDING_TABLE[key]
    return f"ADR 0104 D1's table, row \"{was}\": record {recorded}, because {why}"


def recording_row(moment: Moment) -> str:
    """The row of ADR 0104 D1's table an execution in this moment is in, quoted."""
    if moment.status == "suspended":
        return table_row("parked-in-doubt" if moment.parked_on == IN_DOUBT else "parked-at-gate")
    return table_row("crashed" if moment.status in ("running", "pending") else "terminal")


def refusal_argument(op: str, context: tuple[int | None, str] | None, appended: list[int | None],
                     should: str) -> dict[str, Any]:
    """Violation fields for an operation that should have been refused: the event that sets the
    scene (with its role), what the operation appended, and the refusal the decision requires."""
    cited: list[int | None] = []
    roles: list[str] = []
    if context is not None and context[0] is not None:
        cited.append(context[0])
        roles.append(context[1])
    for seq in appended[:4]:
        cited.append(seq)
        roles.append(f"appended by the {op}, which should have been refused")
    return {"events": tuple(cited), "roles": tuple(roles), "expected": f"{should}, with nothing appended"}
