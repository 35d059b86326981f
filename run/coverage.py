"""Coverage (issue 9): which refusal reasons, scanner verdicts, rows of the ADR 0104
recording table and emit-guard rules a run reached, and by which layer.

This is coverage, not judgement: `reached(step, trace)` says which situations one
operation put the kernel in, read from what the kernel DID (its outcome and the
events it appended), never from what the script meant to provoke. Whether the
kernel then behaved is the predicates' business (properties/).

The universe is data: refusal items are spec/refusals.toml (a new reason is a new
item, applicable everywhere until `REFUSAL_REQUIRES` says otherwise); verdicts,
recording rows and emit rules are the small tables below, each citing its ADR
decision. Pure Python: the spec files are read (through pydantic) once, cached;
nothing per step touches pydantic."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Callable, Iterable, Iterator, Mapping

from loomcheck.contract.script import AdvanceClock, Load, Recover, RecoverAbandoned, Resume, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.contract.logview import IN_DOUBT, TERMINAL, final_moment, park_seq
from loomcheck.properties.emitted import Failure, emit_failures, plain_json, scope_emits
from loomcheck.properties.stray_oracle import WARNED, Expected, kinds_of, scan_log

JSON = Any
LAYERS = ("stateful", "explorer", "symbolic", "regressions", "corpus")
GAP_REASON = "coverage-gap"  # Finding.reason of an applicable item no layer reached (a suite-error)


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


# -- the universe ----------------------------------------------------------------------
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
def _spec() -> tuple[tuple[Item, ...], frozenset[str], frozenset[str], frozenset[str], str]:
    """Read once: refusal items, emit refusal reasons, the allow-list, audit types, reserved prefix."""
    from loomcheck.spec.vocabulary import refusals, vocabulary

    items = tuple(Item("refusal", r.reason, r.adr, r.decision, REFUSAL_REQUIRES.get(r.reason, ()),
                       optional=REFUSAL_OPTIONAL.get(r.reason)) for r in refusals().refusal)
    emit_reasons = frozenset(r.reason for r in refusals().refusal if r.error == "EmitRefusedError")
    rules = vocabulary().emit_guard
    return items, emit_reasons, frozenset(rules.allowed), frozenset(rules.audit), rules.reserved_decision_prefix


def universe() -> tuple[Item, ...]:
    return _spec()[0] + VERDICTS + RECORDING_ROWS + EMIT_RULES


@cache
def _keys() -> frozenset[str]:
    return frozenset(item.key for item in universe())


# -- what one step reaches --------------------------------------------------------------
def reached(step: Step, trace: Trace) -> set[str]:
    """The item keys one operation reached, from its outcome and the logs it touched."""
    keys: set[str] = set()
    if not step.outcome.ok and f"refusal:{step.outcome.reason}" in _keys():
        keys.add(f"refusal:{step.outcome.reason}")
    keys |= _alternative_reached(step)
    keys |= recording_rows(step, trace)
    if not isinstance(step.op, Load):  # a loaded log is what another kernel wrote, not a run of this one
        for execution, before, after in _touched(step):
            keys |= emit_keys(before, after, trace, execution, _re_driven(step))
    keys |= scanner_verdicts(step, trace)
    return keys


def _alternative_reached(step: Step) -> set[str]:
    """A refusal by the admissible alternative of a reason (spec/profiles.toml) reaches that
    reason's situation: a recovery of a finished execution refused not-suspended reaches
    `terminal`; an approval whose park is gone refused unauthenticated reaches `park-not-located`."""
    if step.outcome.ok:
        return set()
    reason = step.outcome.reason
    if isinstance(step.op, Recover) and reason == "not-suspended" and situation(step.log_before, None) == "terminal":
        return {"refusal:terminal"}
    if isinstance(step.op, (Resume, ResumeAs)) and reason == "unauthenticated" and step.log_before \
            and park_seq(step.log_before) is None:
        return {"refusal:park-not-located"}
    return set()


def _touched(step: Step) -> Iterator[tuple[str, list[dict[str, JSON]], list[dict[str, JSON]]]]:
    if step.others is not None:
        for execution, (before, after) in step.others.items():
            yield execution, before, after
    elif step.execution is not None:
        yield step.execution, step.log_before, step.log_after


def _re_driven(step: Step) -> bool:
    """The operation ran the flow again from the top over a log it had run before."""
    return isinstance(step.op, (Resume, ResumeAs, Recover, RecoverAbandoned, AdvanceClock)) and (
        step.outcome.ok and bool(step.log_before) or step.others is not None)


# -- ADR 0104 D1: the recording table ---------------------------------------------------
def situation(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None) -> str | None:
    """Which row of the table an execution with this log is in."""
    if not log and snapshot is None:
        return None
    moment = final_moment(log, dict(snapshot) if snapshot is not None else None)
    if moment.status == "suspended":
        return "parked-in-doubt" if moment.parked_on == IN_DOUBT else "parked-at-gate"
    if moment.status in ("running", "pending"):
        return "crashed"
    return "terminal" if moment.status in TERMINAL else None


def recording_rows(step: Step, trace: Trace) -> set[str]:
    """The row an ACCEPTED resume, resumeAs or recovery was in (by the log before it).
    A resume accepted on an unparked execution is no row: D4 refuses it, a predicate's finding."""
    op = step.op
    if isinstance(op, (Resume, ResumeAs, Recover)):
        if not step.outcome.ok or step.execution is None:
            return set()
        row = situation(step.log_before, trace.snapshots.get(step.execution))
        if isinstance(op, Resume) and row not in ("parked-at-gate", "parked-in-doubt"):
            return set()
        if isinstance(op, Recover):
            return {"recording-row:recovery"} if row == "crashed" else set()
        return {f"recording-row:{row}"} if row is not None else set()
    if isinstance(op, (RecoverAbandoned, AdvanceClock)) and step.others is not None:
        wanted = "crashed" if isinstance(op, RecoverAbandoned) else "parked-at-gate"
        key = "recording-row:recovery" if isinstance(op, RecoverAbandoned) else "recording-row:parked-at-gate"
        for execution in step.recovered or []:
            before = step.others.get(execution, ([], []))[0]
            if situation(before, trace.snapshots.get(execution)) == wanted:
                return {key}
    return set()


# -- ADR 0104 D1: the emit guard (what a run recorded: properties/emitted.py) ------------
_RULE_OF = {"kernel-type": "kernel-type-refused", "invalid-meter": "meter-validated",
            "invalid-quota": "quota-validated", "decision-conflict": "decision-conflict-refused"}


def emit_keys(before: list[dict[str, JSON]], after: list[dict[str, JSON]], trace: Trace, execution: str | None,
              re_driven: bool = False) -> set[str]:
    """The emit refusals and rules one log's new events show. Which emit an invalid-emit or a
    reserved id came from is read from the program that ran (the log names only the step)."""
    fresh = after[len(before):]
    if not fresh:
        return set()
    program = trace.flow_of(after, execution)
    keys: set[str] = set()
    failures = emit_failures(fresh)
    for failure in failures:
        keys.add(f"refusal:{failure.reason}")
        rule = _RULE_OF.get(failure.reason) or _culprit(failure, program)
        if rule is not None:
            keys.add(f"emit-rule:{rule}")
    keys |= {f"emit-rule:{rule}" for rule in _appended_rules(fresh, program)}
    if program is not None and not failures and _reemitted(before, fresh, program, re_driven):
        keys.add("emit-rule:identical-reemit-allowed")
    return keys


def _culprit(failure: Failure, program: Any) -> str | None:
    """The rule an invalid-emit or reserved-decision-id failure broke: the first emit of
    its scope that breaks it (the guard checks plain JSON first, then the type's rule)."""
    if program is None or failure.reason not in ("invalid-emit", "reserved-decision-id"):
        return None
    reserved = _spec()[4]
    for kind, payload, decide in scope_emits(program, failure.step_id):
        if failure.reason == "invalid-emit":
            cause = invalid_emit_cause(kind, payload)
            if cause is not None:
                return cause
        elif kind == "DECISION_RECORDED" and isinstance(payload, dict) \
                and str(payload.get("decisionId", "")).startswith(reserved):
            return "reserved-id-decide" if decide else "reserved-id-emit"
    return None


def invalid_emit_cause(kind: str, payload: JSON) -> str | None:
    """Which invalid-emit rule an emit of `kind` with `payload` breaks, if any."""
    if not plain_json(payload):
        return "not-plain-json"
    if kind == "DECISION_RECORDED":
        ok = isinstance(payload, dict) and isinstance(payload.get("decisionId"), str)
        return None if ok else "decision-needs-id"
    if kind in _spec()[3] and not isinstance(payload, dict):
        return "audit-needs-object"
    return None


def _appended_rules(fresh: list[dict[str, JSON]], program: Any) -> set[str]:
    """Rules shown by what was appended: an allowed kernel fact, an effect's decision under
    its step's namespace, a flow's emitted decision under its own id."""
    _, _, allowed, _, reserved = _spec()
    flow_ids = _flow_emitted_ids(program) if program is not None else set()
    rules: set[str] = set()
    open_step: tuple[str, JSON] | None = None
    for event in fresh:
        kind, payload = event.get("type"), event.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        if kind == "STEP_STARTED":
            open_step = (str(payload.get("stepId")), payload.get("attempt"))
        elif kind in ("STEP_COMPLETED", "STEP_FAILED"):
            open_step = None
        if kind not in allowed:
            continue
        decision = payload.get("decisionId") if kind == "DECISION_RECORDED" else None
        if isinstance(decision, str) and decision.startswith(reserved):
            continue  # the kernel's own record (an in-doubt verdict, an override): not through the guard
        rules.add("allowed-type-appended")
        if not isinstance(decision, str):
            continue
        if open_step is not None and decision.startswith(f"effect:{open_step[0]}#{open_step[1]}:"):
            rules.add("effect-id-rewritten")
        elif open_step is None and decision in flow_ids:
            rules.add("flow-emit-keeps-id")
    return rules


def _flow_emitted_ids(program: Any) -> set[str]:
    return {str(p["decisionId"]) for kind, p, decide in scope_emits(program, None)
            if not decide and kind == "DECISION_RECORDED" and isinstance(p, dict) and isinstance(p.get("decisionId"), str)}


def _reemitted(before: list[dict[str, JSON]], fresh: list[dict[str, JSON]], program: Any, re_driven: bool) -> bool:
    """A flow-level emitted decision the run met a second time with the same choice: on a
    re-drive over a log that holds it, or emitted twice in one run (ADR 0102: an emit re-runs)."""
    emitted = [(str(p["decisionId"]), p.get("choice")) for kind, p, decide in scope_emits(program, None)
               if not decide and kind == "DECISION_RECORDED" and isinstance(p, dict) and isinstance(p.get("decisionId"), str)]
    recorded = {(d, _canon(c)) for d, c in _decisions(before)} if re_driven else set()
    appended = {(d, _canon(c)) for d, c in _decisions(fresh)}
    seen: set[tuple[str, str]] = set()
    for decision, choice in emitted:
        key = (decision, _canon(choice))
        if key in recorded or (key in seen and key in appended):
            return True
        seen.add(key)
    return False


def _decisions(events: Iterable[dict[str, JSON]]) -> Iterator[tuple[str, JSON]]:
    for event in events:
        payload = event.get("payload")
        if event.get("type") == "DECISION_RECORDED" and isinstance(payload, dict) \
                and isinstance(payload.get("decisionId"), str):
            yield payload["decisionId"], payload.get("choice")


def _canon(value: JSON) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return f"<not JSON #{id(value)}>"  # equal to nothing else: no re-emit is credited on it


# -- ADR 0104 D2: the stray scan --------------------------------------------------------
# Refusals only a scan gives: the kernel read the whole retained log.
SCAN_REFUSALS = ("ambiguous-legacy-answers", "discard-without-ambiguity")
# Refusals of an operation on a finished execution, met before any scan (D4).
FINISHED_REFUSALS = ("not-suspended", "terminal")


def scanner_verdicts(step: Step, trace: Trace) -> set[str]:
    """The verdicts the suite's own oracle (properties/stray_oracle.py) gives the log an operation
    met, credited when the kernel demonstrably read it: it accepted a resume, resumeAs or
    recovery (each scans first, ADR 0104 D2) or refused with a reason only a scan gives.
    "harmless" is credited when the operation met a finished log and was refused before a
    scan (the only place a correct kernel meets one). An ambiguity shape needs the kernel to
    have acted on it: refused ambiguous-legacy-answers, or accepted an override for its step."""
    op = step.op
    if "legacy-scan" not in trace.features:
        return set()
    if isinstance(op, RecoverAbandoned) and step.others is not None:
        found: set[str] = set()
        for execution in step.recovered or []:  # each re-driven one was scanned first (recovery included, D2)
            before = step.others.get(execution, ([], []))[0]
            program = trace.flow_of(before, execution)
            found |= {f"verdict:{c.verdict}" for c in _oracle(before, trace.snapshots.get(execution), program).classified
                      if c.verdict != "harmless"}
        return found
    if not isinstance(op, (Resume, ResumeAs, Recover)):
        return set()
    execution = op.execution
    snapshot = trace.snapshots.get(execution)
    if not step.log_before and snapshot is None:
        return set()
    finished = final_moment(step.log_before, snapshot).status in TERMINAL
    program = trace.flows.get(op.flow) if isinstance(op, ResumeAs) else trace.flow_of(step.log_before, execution)
    expected = _oracle(step.log_before, snapshot, program, live=isinstance(op, ResumeAs) and finished)
    scanned = step.outcome.ok or step.outcome.reason in SCAN_REFUSALS
    keys: set[str] = set()
    if scanned:
        keys |= {f"verdict:{c.verdict}" for c in expected.classified if c.verdict != "harmless"}
    elif finished and step.outcome.reason in FINISHED_REFUSALS:
        keys |= {"verdict:harmless" for c in expected.classified if c.verdict == "harmless"}
    keys |= _shapes(expected, step)
    return keys


def _oracle(log: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None, program: Any, live: bool = False) -> Expected:
    """spec/legacy-logs.md read by properties/stray_oracle.py; a step the program lacks is possibly human."""
    return scan_log(log, snapshot, kinds_of(_steps_only(program)), live)


def _steps_only(program: Any) -> Mapping[str, JSON]:
    """The program's steps as kinds_of reads them, without dumping the whole model: a gate's
    view may be nested far deeper than pydantic serialises (the bound-answers corpus)."""
    if program is None:
        return {"body": []}
    if isinstance(program, Mapping):
        return program
    body: list[JSON] = []
    for op in program.body:
        for call in getattr(op, "branches", None) or [op]:
            if getattr(call, "op", None) == "step":
                body.append({"op": "step", "id": call.id, "kind": call.kind})
    return {"body": body}


def _shapes(expected: Expected, step: Step) -> set[str]:
    options = getattr(step.op, "options", None) or {}
    discard = options.get("discardLegacyAnswers") if isinstance(options, dict) else None
    overridden = discard.get("stepId") if isinstance(discard, dict) and step.outcome.ok else None
    refused = not step.outcome.ok and step.outcome.reason == "ambiguous-legacy-answers"
    return {f"verdict:{a.shape}" for a in expected.ambiguities if refused or a.step_id == overridden}


def scanner_keys(events: list[dict[str, JSON]], snapshot: Mapping[str, JSON] | None, program: Mapping[str, JSON] | None,
                 live: bool = False, refused_ambiguous: bool = False) -> set[str]:
    """For a layer that drives a scan without Steps (none yet; the fleet corpus, whose
    fleet/case_replay.py makes unscripted driver calls, could): the oracle's verdicts on the log the kernel scanned,
    the shapes only when the kernel refused ambiguous-legacy-answers. Credit them only for a
    case the kernel scanned (its final operation was accepted or refused by the scan)."""
    expected = _oracle(events, snapshot, program, live)
    keys = {f"verdict:{c.verdict}" for c in expected.classified}
    if refused_ambiguous:
        keys |= {f"verdict:{a.shape}" for a in expected.ambiguities}
    return keys


def warned_keys(warnings: Iterable[Mapping[str, JSON]]) -> set[str]:
    """Verdicts the kernel itself reported through on_warn (driver.warnings(), feature
    legacy-scan): the kernel's own confirmation of passed, at-risk and unverifiable. The Step
    does not hold warnings, so `reached` cannot use them; a corpus that reads them can."""
    return {f"verdict:{w.get('verdict')}" for w in warnings
            if isinstance(w, Mapping) and w.get("verdict") in WARNED}


# -- the collector -----------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    """One item in a run's coverage (reports/model.py CoverageRow is its JSON form)."""

    kind: str
    name: str
    adr: str | None
    decision: str
    reachedBy: list[str]
    applicable: bool
    why: str | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def gap(self) -> bool:
        return self.applicable and not self.reachedBy

    def to_json(self) -> dict[str, JSON]:
        return {"kind": self.kind, "name": self.name, "adr": self.adr, "decision": self.decision,
                "reachedBy": list(self.reachedBy), "applicable": self.applicable, "why": self.why}


@dataclass
class Coverage:
    items: tuple[Item, ...] = field(default_factory=universe)
    by: dict[str, set[str]] = field(default_factory=dict)  # item key -> layers that reached it
    errors: list[str] = field(default_factory=list)  # the classifier's own failures: a suite-error each

    def __post_init__(self) -> None:
        self._item_keys = frozenset(item.key for item in self.items)  # credit checks every key against it

    def observe(self, step: Step, trace: Trace, layer: str) -> set[str]:
        """Never raises for what an implementation wrote: a classifier failure on a strange log
        is kept in `errors` (the suite's fault, to report), and the run goes on."""
        try:
            keys = reached(step, trace)
        except Exception as exc:  # noqa: BLE001 - coverage must not stop a run that checks a kernel
            self.errors.append(f"coverage of step {step.index} ({step.op.op}): {type(exc).__name__}: {exc}")
            return set()
        for key in keys:
            self.credit(key, layer)
        return keys

    def observer(self, layer: str) -> "Callable[[Step, Trace], None]":
        """A Session observer (Session.observers) crediting `layer` with every step recorded."""
        def observe(step: Step, trace: Trace) -> None:
            self.observe(step, trace, layer)
        return observe

    def credit(self, key: str, layer: str) -> None:
        """For layers that produce no Steps (symbolic witnesses, a corpus's unscripted calls)."""
        if layer not in LAYERS:
            raise ValueError(f"unknown layer {layer!r}; one of {', '.join(LAYERS)}")
        if key not in self._item_keys:
            raise KeyError(f"{key!r} is no coverage item (kind:name, e.g. refusal:gate-mismatch)")
        self.by.setdefault(key, set()).add(layer)

    def merge(self, other: "Coverage | Mapping[str, Iterable[str]]") -> None:
        """Fold in another collector's credits (another process, a saved run)."""
        credits = other.by if isinstance(other, Coverage) else other
        for key, layers in credits.items():
            for layer in layers:
                self.credit(key, layer)

    def summary(self, features: Iterable[str]) -> list[Row]:
        have = frozenset(features)
        rows = []
        for item in self.items:
            layers = sorted(self.by.get(item.key, ()), key=LAYERS.index)
            missing = [f for f in item.requires if f not in have]
            if item.one_of and not have & set(item.one_of):
                missing.append(" or ".join(item.one_of))
            if item.unreachable is not None and not layers:
                rows.append(Row(item.kind, item.name, item.adr, item.decision, layers, False,
                                f"not reachable through the driver: {item.unreachable}"))
                continue
            if item.optional is not None and not layers:
                rows.append(Row(item.kind, item.name, item.adr, item.decision, layers, False,
                                f"not required: {item.optional}"))
                continue
            if missing:
                why: str | None = f"needs {', '.join(missing)}"
            elif not layers:
                why = "no layer reached it" + (f" ({item.note})" if item.note else "")
            else:
                why = None
            rows.append(Row(item.kind, item.name, item.adr, item.decision, layers, not missing, why))
        return rows

    def gaps(self, features: Iterable[str]) -> list[Row]:
        """Applicable items no layer reached: each a failure of the suite (issue 9)."""
        return [row for row in self.summary(features) if row.gap]


def gap_message(row: Row) -> str:
    where = f"ADR {row.adr} {row.decision}" if row.adr else row.decision
    return (f"coverage gap: {row.kind} {row.name!r} ({where}) is applicable to this implementation, "
            f"but no layer of the run reached it; the suite does not exercise it.")


def gap_findings(rows: list[Row]) -> list[Any]:
    """The gaps as report Findings (suite-error, reason coverage-gap): the report's boundary."""
    from loomcheck.reports.model import Finding

    return [Finding(kind="suite-error", reason=GAP_REASON, message=gap_message(row)) for row in rows if row.gap]


__all__ = ["Coverage", "Item", "Row", "LAYERS", "GAP_REASON", "REFUSAL_REQUIRES", "REFUSAL_OPTIONAL", "universe", "reached",
           "recording_rows", "emit_keys", "emit_failures", "scanner_verdicts", "scanner_keys", "warned_keys",
           "situation", "gap_findings", "gap_message"]
