"""The coverage items a run should reach: every refusal reason of spec/refusals.toml (a new
reason is a new item, applicable everywhere until `REFUSAL_REQUIRES` says otherwise), the
stray scanner's verdicts, the rows of ADR 0104's recording table and the emit guard's rules,
each citing its ADR decision and the driver features without which no kernel can reach it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from loomcheck.spec.vocabulary import refusals


@dataclass(frozen=True)
class Item:
    """One thing a run should reach. `requires`: the driver features without which
    no kernel can be put in that situation through the driver (then not applicable)."""

    kind: str
    name: str
    adr: str | None
    decision: str
    requires: tuple[str, ...] = ()
    note: str | None = None  # how it is reached, when that is not obvious from its name
    unreachable: str | None = None  # why no driver call can reach it on any kernel (then never a gap)
    optional: str | None = None  # why a correct kernel may never reach it, a choice of its own (then never a gap)
    one_of: tuple[str, ...] = ()  # and at least one of these: the several ways a case can get there

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


# Features each refusal needs, decided from its description in spec/refusals.toml and
# the features the invariants that judge it require (spec/invariants/*.toml). A reason
# missing here needs nothing: applicable to every kernel, a gap until something reaches it.
_EMIT = ("emit-guard",)
_MIGRATE = ("resume-as", "state-migration")
REFUSAL_REQUIRES: dict[str, tuple[str, ...]] = {
    "unknown-execution": (), "kernel-namespace": (), "not-suspended": (), "gate-mismatch": (),
    "terminal": ("recover",),                          # a recovery of a finished execution (D4)
    "invalid-input": (), "unknown-flow": (), "duplicate-execution": (), "invalid-payload": (), "invalid-program": (),
    "kernel-type": _EMIT, "invalid-meter": _EMIT, "invalid-quota": _EMIT, "reserved-decision-id": _EMIT,
    "decision-conflict": _EMIT, "invalid-emit": _EMIT,
    "not-a-verdict": ("in-doubt", "recover"),          # an in-doubt park needs a crash fault (feature "recover")
    "view-digest-mismatch": ("view-digest",),
    "unauthenticated": ("security",),
    "park-not-located": ("security", "retention"),     # the park retained away: truncate_prefix
    "timer-wake-not-system": ("security", "timers"),
    "strict-needs-authenticator": ("security",), "weak-secret": ("security",),
    "code-mismatch": ("code-versions",),
    "transform-failed": _MIGRATE, "transform-returned-nothing": _MIGRATE, "unknown-transform": _MIGRATE,
    "input-contract": ("resume-as", "state-migration", "input-validation"),
    # A stray exists only in a log an older kernel wrote (load-log), and only a human step is ambiguous.
    "ambiguous-legacy-answers": ("legacy-scan", "load-log", "human-steps"),
    "invalid-discard": ("legacy-scan", "security"),    # the override travels in resume options
    "discard-on-kernel-resume": ("legacy-scan", "security", "timers"),  # a TIMER_FIRED wake carrying one
    "discard-unverified": ("legacy-scan", "security"),
    "discard-without-ambiguity": ("legacy-scan", "security"),  # needs a VERIFIED override (an authenticator)
    "invalid-config": ("security",),
}
# Refusals a correct kernel may never make: the corpus that reaches them accepts either outcome.
_BOUND = ("a bound of the kernel's own (the reference's: spec/profiles.toml, ingress-limits); a kernel that "
          "takes every value the hostile-payloads corpus sends never refuses it")
REFUSAL_OPTIONAL: dict[str, str] = {
    "input-too-large": _BOUND,
    "payload-too-large": _BOUND,
    "invalid-config": "a kernel may read a malformed configuration leniently, and the suite sends only "
                      "well-formed ones (the reference's refusal is tests/test_ingress.py's)",
}

_SCAN = ("legacy-scan", "load-log")
VERDICTS = (
    Item("verdict", "passed", "0104", "D2", _SCAN, "a stray a gate park follows, in the log a scan read"),
    # A live execution a plain resume meets is parked, at a gate park (then the stray is passed) unless
    # the park is a human step's: at-risk needs a recovery, a human park or a resumeAs to be met.
    Item("verdict", "at-risk", "0104", "D2", _SCAN, "a stray no gate park follows, execution live",
         one_of=("recover", "human-steps", "resume-as")),
    Item("verdict", "harmless", "0104", "D2", _SCAN,
         "a stray in a terminal log: a correct kernel never scans one (resume and recovery of a finished "
         "execution are refused first, a resumeAs re-open is judged live), so it is reached when an "
         "operation meets such a log and is refused not-suspended or terminal"),
    Item("verdict", "unverifiable", "0104", "D2", _SCAN, "a snapshot's {} the retained log does not explain",
         one_of=("recover", "human-steps")),  # likewise: no gate park may follow it
    Item("verdict", "reparked-after-answer", "0104", "D2", _SCAN + ("human-steps",),
         "ambiguity shape: reached when the kernel refused ambiguous-legacy-answers or took an override for it"),
    Item("verdict", "stray-before-first-start", "0104", "D2", _SCAN + ("human-steps",),
         "ambiguity shape: reached when the kernel refused ambiguous-legacy-answers or took an override for it"),
)

# ADR 0104 D1, the recording table ("resume() and resumeAs() record ...") and recovery.
RECORDING_ROWS = (
    Item("recording-row", "parked-at-gate", "0104", "D1", (),
         "an accepted resume or resumeAs (or a timer wake) of an execution parked at a gate or human step"),
    Item("recording-row", "parked-in-doubt", "0104", "D1", ("in-doubt", "recover"),
         "an accepted resume or resumeAs of an execution parked on EffectInDoubtResolved"),
    Item("recording-row", "crashed", "0104", "D1", ("resume-as", "recover"),
         "an accepted resumeAs of a running or pending execution (a plain resume of one is refused, D4)"),
    Item("recording-row", "terminal", "0104", "D1", ("resume-as",), "an accepted resumeAs of a finished execution"),
    Item("recording-row", "recovery", "0104", "D1", ("recover",),
         "an accepted recover (or recover-abandoned re-drive) of a running or pending execution"),
)

# ADR 0104 D1, "Flow and effect code cannot write kernel state": the guard's rules.
EMIT_RULES = (
    Item("emit-rule", "kernel-type-refused", "0104", "D1", _EMIT, "a run failed kernel-type"),
    Item("emit-rule", "allowed-type-appended", "0104", "D1", _EMIT,
         "an allow-listed kernel type (not a __loom_ decision) appended by a run"),
    Item("emit-rule", "meter-validated", "0104", "D1", _EMIT, "a run failed invalid-meter"),
    Item("emit-rule", "quota-validated", "0104", "D1", _EMIT, "a run failed invalid-quota"),
    Item("emit-rule", "audit-needs-object", "0104", "D1", _EMIT,
         "a run failed invalid-emit where the failing scope emits an audit type with a non-object payload"),
    Item("emit-rule", "decision-needs-id", "0104", "D1", _EMIT,
         "a run failed invalid-emit where the failing scope emits a DECISION_RECORDED with no string decisionId"),
    Item("emit-rule", "not-plain-json", "0104", "D1", _EMIT,
         "a run failed invalid-emit where the failing scope emits a payload no store holds",
         unreachable="a flow program is JSON with a canonical form (its code version), so no driver call makes "
                     "flow code emit a payload that is not plain JSON; the reference's guard is checked for it "
                     "in process (tests/test_emitguard.py, symbolic/guards.py's NaN and infinity witnesses)"),
    Item("emit-rule", "reserved-id-emit", "0104", "D1", _EMIT,
         "a run failed reserved-decision-id on an emitted DECISION_RECORDED"),
    Item("emit-rule", "reserved-id-decide", "0104", "D1", _EMIT, "a run failed reserved-decision-id on ctx.decide"),
    Item("emit-rule", "effect-id-rewritten", "0104", "D1", _EMIT,
         "a DECISION_RECORDED appended inside step S attempt A under effect:S#A:<id>"),
    Item("emit-rule", "decision-conflict-refused", "0104", "D1", _EMIT, "a run failed decision-conflict"),
    Item("emit-rule", "identical-reemit-allowed", "0104", "D1", _EMIT,
         "a flow's emitted decision met again with the same choice (replay, or twice in one run), no emit failure"),
    Item("emit-rule", "flow-emit-keeps-id", "0104", "D1", _EMIT,
         "a flow-level emitted DECISION_RECORDED appended under its own id"),
)


@cache
def refusal_items() -> tuple[Item, ...]:
    """One item per refusal reason of spec/refusals.toml, read once."""
    return tuple(Item("refusal", r.reason, r.adr, r.decision, REFUSAL_REQUIRES.get(r.reason, ()),
                      optional=REFUSAL_OPTIONAL.get(r.reason)) for r in refusals().refusal)


def universe() -> tuple[Item, ...]:
    return refusal_items() + VERDICTS + RECORDING_ROWS + EMIT_RULES


@cache
def item_keys() -> frozenset[str]:
    return frozenset(item.key for item in universe())
