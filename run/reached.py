"""What one operation reached, read from what the kernel DID (its outcome and the events it
appended), never from what the script meant to provoke: the refusal it gave, the row of ADR
0104's recording table it was in, the emit-guard rules its run showed and the scanner verdicts
of the log it read. Whether the kernel then behaved is the predicates' business (properties/).
Pure Python: the spec files are read (through pydantic) once; nothing per step touches pydantic."""

from __future__ import annotations

import json
from functools import cache
from typing import Any, Iterable, Iterator, Mapping

from loomcheck.contract.logview import IN_DOUBT, TERMINAL, final_moment, park_seq
from loomcheck.contract.script import AdvanceClock, Load, Recover, RecoverAbandoned, Resume, ResumeAs
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.emitted import Failure, emit_failures, plain_json, scope_emits
from loomcheck.properties.stray_oracle import WARNED, Expected, kinds_of, scan_log
from loomcheck.run.coverage_items import item_keys
from loomcheck.spec.vocabulary import vocabulary

JSON = Any


@cache
def _emit_guard() -> tuple[frozenset[str], frozenset[str], str]:
    """spec/vocabulary.toml's emit guard, read once: the allow-list, the audit types, the reserved decision prefix."""
    rules = vocabulary().emit_guard
    return frozenset(rules.allowed), frozenset(rules.audit), rules.reserved_decision_prefix


def reached(step: Step, trace: Trace) -> set[str]:
    """The item keys one operation reached, from its outcome and the logs it touched."""
    keys: set[str] = set()
    if not step.outcome.ok and f"refusal:{step.outcome.reason}" in item_keys():
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
    reserved = _emit_guard()[2]
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
    if kind in _emit_guard()[1] and not isinstance(payload, dict):
        return "audit-needs-object"
    return None


def _appended_rules(fresh: list[dict[str, JSON]], program: Any) -> set[str]:
    """Rules shown by what was appended: an allowed kernel fact, an effect's decision under
    its step's namespace, a flow's emitted decision under its own id."""
    allowed, _, reserved = _emit_guard()
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
