"""The legacy-logs corpus (ADR 0104 D2): logs as older kernels of a mixed fleet
wrote them, loaded into the kernel, then one operation the current kernel must
judge. The expected verdict is loomcheck's independent reading of
spec/legacy-logs.md (properties/stray_oracle.py), never the reference kernel's.

Compared per case: refused ambiguous-legacy-answers (appending nothing) exactly
when the reading finds an unresolved ambiguity; the verdicts warned about; and,
when accepted, that every gate the run passes receives the entry at its index
(the fold serves pre-0104 entries as written). The downgrade hazard is shown on
logs the kernel itself writes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator

from loomcheck.fleet.corpus import Case
from loomcheck.fleet.generate import generated_case
from loomcheck.fleet.scripted_cases import fixed_cases
from loomcheck.fleet.case_replay import answers_of, replay_case
from loomcheck.contract.script import Define, Load, Operation, Recover, Resume, ResumeAs, Start
from loomcheck.contract.needs import Undeclared, operations_need
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step
from loomcheck.corpora.result import CorpusResult
from loomcheck.corpora.legacy_scenarios import HUMAN, NEW_PARK, OLD_PARK, PAIR, START, REPARKED, events, warned
from loomcheck.properties.registry import Violation
from loomcheck.properties.stray_oracle import kinds_of, scan_log
from loomcheck.spec.names import IN_DOUBT_GATE


WARNING_MARK = "\x00warning:"  # marks a violation seen in the warnings alone (stripped before reporting)


@dataclass(frozen=True)
class LegacyCase:
    name: str
    program: dict[str, Any]
    log: list[tuple[str, Any]]
    operation: tuple[Any, ...]             # ("resume", gate, payload) | ("resume-as", gate, payload) | ("recover",)
    judged: str = "legacy.classified"      # the invariant a wrong warning breaks
    snapshot: dict[str, Any] | None = None


GATES = {"body": [{"op": "suspend", "on": "go1"}, {"op": "observe"}, {"op": "suspend", "on": "go2"}, {"op": "observe"},
                  {"op": "suspend", "on": "go3"}, {"op": "observe"}, {"op": "complete"}]}
WITH_HUMAN = {"body": [{"op": "suspend", "on": "go1"}, {"op": "observe"}, {"op": "step", "id": "h", "kind": "human"},
                       {"op": "observe"}, {"op": "suspend", "on": "go2"}, {"op": "observe"}, {"op": "complete"}]}
IN_DOUBT = {"body": [{"op": "step", "id": "n", "kind": "non-idempotent"}, {"op": "suspend", "on": "go1"},
                     {"op": "observe"}, {"op": "suspend", "on": "go2"}, {"op": "observe"}, {"op": "complete"}]}
PARALLEL = {"body": [{"op": "parallel", "branches": [{"op": "step", "id": "h", "kind": "human"},
                                                     {"op": "step", "id": "k", "kind": "human"}]},
                     {"op": "observe"}, {"op": "complete"}]}
STRAY_AFTER_START = [START, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}}), ("go1", "g1"),
                     ("EXECUTION_RESUMED", "g1"), ("STEP_STARTED", {"stepId": "h", "attempt": 1}), *PAIR,
                     ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK]
VERDICT = {"stepId": "n", "resolution": "succeeded", "output": "done"}
SNAPSHOT = {"sequence": 3, "status": "running", "flowId": "f", "suspendedOn": None, "steps": {},
            "variables": {"_input": None, "_resumePayloads": [{}], "_resumePayload": {}}}

CASES = (
    LegacyCase("recovery stray passed", GATES, [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}})],
               ("resume", "go2", "v2")),
    LegacyCase("recovery stray at risk", GATES, [START, *PAIR], ("recover",)),
    LegacyCase("in-doubt verdict entry", IN_DOUBT,
               [START, ("STEP_STARTED", {"stepId": "n", "attempt": 1}), ("EFFECT_INDOUBT", {"stepId": "n", "attempt": 1}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": IN_DOUBT_GATE, "stepId": "n", "attempt": 1}}),
                (IN_DOUBT_GATE, VERDICT), ("EXECUTION_RESUMED", VERDICT),
                ("STEP_COMPLETED", {"stepId": "n", "output": "done"})], ("recover",)),
    LegacyCase("resumeAs onto a crashed execution", GATES,
               [START, ("EXECUTION_MIGRATED", {"fromFlow": "f", "toFlow": "f"}), ("Redeploy", {"p": 1}),
                ("EXECUTION_RESUMED", {"p": 1})], ("recover",)),
    LegacyCase("a stray in a finished log is harmless", GATES, [START, *PAIR, ("EXECUTION_COMPLETED", {"output": None})],
               ("resume", "go1", "v1")),
    LegacyCase("re-open of a finished execution is live", GATES, [START, *PAIR, ("EXECUTION_FAILED", {"error": {}})],
               ("resume-as", "Reopen", None), judged="legacy.reopen-judged-live"),
    LegacyCase("a human park proves nothing", WITH_HUMAN,
               [START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1}), NEW_PARK], ("resume", HUMAN, "yes"),
               judged="legacy.human-park-proves-nothing"),
    # D2's "a human park proves nothing" on its own, outside both ambiguous shapes: the human step
    # started (go1 answered), its worker died before the park; an old node's recovery wrote {} and
    # its re-run parked at the step again. Accepted, the stray at-risk: the step takes the {}.
    LegacyCase("a stray after the human step's first start, then its park", WITH_HUMAN, STRAY_AFTER_START,
               ("resume", HUMAN, "yes"), judged="legacy.human-park-proves-nothing"),
    LegacyCase("re-parked after an answer", WITH_HUMAN, REPARKED, ("resume", HUMAN, "new"),
               judged="legacy.ambiguous-refused"),
    LegacyCase("stray before the first start, recovery", WITH_HUMAN,
               [START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1})], ("recover",),
               judged="legacy.ambiguous-refused"),
    LegacyCase("two human steps in one parallel", PARALLEL,
               [START, ("STEP_STARTED", {"stepId": "h", "attempt": 1}), ("STEP_STARTED", {"stepId": "k", "attempt": 1}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": HUMAN, "stepId": "h"}}), (HUMAN, "a1"),
                ("EXECUTION_RESUMED", "a1"), ("STEP_COMPLETED", {"stepId": "h", "output": "a1"}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": HUMAN, "stepId": "k"}})], ("resume", HUMAN, "a2"),
               judged="legacy.park-attribution"),
    LegacyCase("an unresolvable step is possibly human", WITH_HUMAN,
               [START, *PAIR, ("STEP_STARTED", {"stepId": "gone", "attempt": 1})], ("recover",),
               judged="legacy.park-attribution"),
    LegacyCase("a known gate step is no human park", GATES,
               [START, ("STEP_STARTED", {"stepId": "gone", "attempt": 1}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}})], ("resume", "go1", "v1"),
               judged="legacy.park-attribution"),
    LegacyCase("retention left a {} unexplained", GATES, [("STEP_STARTED", {"stepId": "x", "attempt": 1})],
               ("recover",), snapshot=SNAPSHOT),
    # Section 6: a snapshot's {} before a human step's first start is unverifiable only; the human
    # park after it proves nothing, so a plain resume (no recovery) meets it.
    LegacyCase("retention left a {} before a human step", WITH_HUMAN,
               [("STEP_STARTED", {"stepId": "h", "attempt": 1}), NEW_PARK], ("resume", HUMAN, "yes"),
               snapshot=SNAPSHOT),
    LegacyCase("a pre-1.16 snapshot", GATES, [("STEP_STARTED", {"stepId": "x", "attempt": 1})], ("recover",),
               snapshot={**SNAPSHOT, "variables": {"_input": None, "_resumePayload": {}}}),
)


# Every case loads a log and reads the warnings its operation gave (ADR 0104 D2).
LOADED = frozenset({"load-log", "legacy-scan"})


def case_needs(case: LegacyCase) -> set[str]:
    """What a hand-written case exercises: its program, the load, its one operation."""
    return set(LOADED) | operations_need([Define("f", case.program), _operation(case)])


def fleet_needs(case: Case) -> set[str]:
    """What a fleet case exercises: its programs, the load, its final operation."""
    return set(LOADED) | operations_need(_script_of(case))


def _operation(case: LegacyCase) -> Operation:
    kind = case.operation[0]
    if kind == "resume":
        return Resume("x", case.operation[1], case.operation[2])
    if kind == "resume-as":
        return ResumeAs("x", "f", case.operation[1], case.operation[2])
    return Recover("x")


def run_legacy_logs(session: Session, invariant_ids: tuple[str, ...]) -> CorpusResult:
    result = CorpusResult()
    for case in CASES:
        try:
            session.require(case_needs(case), case.name)
            found = list(_judge(session, case))
        except Undeclared as undeclared:
            result.skip(undeclared)
            continue
        except ImplementationFailed as failed:
            if failed.reason:
                raise  # its process hung, died or broke the protocol: a finding of the run, not a violation
            found = [Violation(case.judged, f"{case.name}: the implementation failed: {failed}")]
        result.cases += 1
        result.per_category[case.judged] = result.per_category.get(case.judged, 0) + 1
        found = [v for v in found if v.invariant in invariant_ids]
        # A script reproduces outcomes and logs; a warning is neither, so a case failed only
        # on its warnings names itself instead of a counterexample file.
        if any(not v.message.startswith(WARNING_MARK) for v in found) and result.operations is None:
            result.operations = session.script()
        result.violations.extend(replace(v, message=v.message.removeprefix(WARNING_MARK)) for v in found)
    _fleet(session, invariant_ids, result)
    if "hazard.downgrade" in invariant_ids:
        result.cases += 1
        result.per_category["downgrade"] = 1
        result.violations.extend(_downgrade(session))
    return result


FLEET_SEED, FLEET_CASES = 1, 200   # the CI share of `loomcheck fleet`; the tests replay 1000


def _fleet(session: Session, invariant_ids: tuple[str, ...], result: CorpusResult) -> None:
    """The generated fleet corpus (fleet/): each case replayed through the driver by
    fleet/case_replay.py, the same code another kernel's suite can use with the corpus file."""
    for case in fleet_cases():
        try:
            problems = list(session.unscripted(f"fleet case {case.id}", lambda: replay_case(session.driver, case),
                                               needs=fleet_needs(case)))
        except Undeclared as undeclared:  # each case is judged where its own features are declared
            result.skip(undeclared)
            continue
        except ImplementationFailed as failed:
            if failed.reason:
                raise  # its process hung, died or broke the protocol: a finding of the run, not a violation
            problems = [f"the implementation failed: {failed}"]
        result.cases += 1
        result.per_category["fleet " + case.kind] = result.per_category.get("fleet " + case.kind, 0) + 1
        found = [Violation(_invariant_of(problem, case), f"fleet case {case.id} ({case.title}): {problem}")
                 for problem in problems]
        found = [v for v in found if v.invariant in invariant_ids]
        if any(not p.startswith("warned") for p in problems) and found and result.operations is None:
            result.operations = _script_of(case)
        result.violations.extend(found)


def fleet_cases() -> list[Case]:
    return fixed_cases() + [generated_case(FLEET_SEED, i) for i in range(FLEET_CASES)]


def _invariant_of(problem: str, case: Case) -> str:
    """Which rule a difference from the recorded verdict breaks."""
    if problem.startswith("warned"):
        return "legacy.reopen-judged-live" if case.live else "legacy.classified"
    if "ambiguous-legacy-answers" in problem or "refusal appended" in problem:
        return "legacy.park-attribution" if "parallel" in case.id else "legacy.ambiguous-refused"
    return "legacy.replayed-as-written"


def _script_of(case: Case) -> list[Operation]:
    """The case as a replayable script: define, load, the final operation."""
    ops: list[Operation] = [Define(flow, program) for flow, program in {case.flowId: case.program,
                                                                          **case.targets}.items()]
    ops.append(Load(case.executionId, [e.model_dump(mode="json") for e in case.log], case.snapshot))
    final = case.final
    if final.op == "resume":
        ops.append(Resume(case.executionId, str(final.type), final.payload))
    elif final.op == "resumeAs":
        ops.append(ResumeAs(case.executionId, str(final.flowId), str(final.type), final.payload))
    else:
        ops.append(Recover(case.executionId))
    return ops


def _judge(session: Session, case: LegacyCase) -> Iterator[Violation]:
    session.reset()
    session.apply(Define("f", case.program))
    first = int(case.snapshot["sequence"]) + 1 if case.snapshot else 1
    loaded = session.apply(Load("x", events(case.log, first), case.snapshot))
    if not loaded.outcome.ok:
        raise ImplementationFailed("load", f"refused the legacy log ({loaded.outcome.reason})")
    log = loaded.log_after
    live = case.operation[0] == "resume-as" and (loaded.state_after or {}).get("status") in (
        "completed", "failed", "cancelled")
    expected = scan_log(log, case.snapshot, kinds_of(case.program), live)
    held = ((loaded.state_after or {}).get("variables") or {}).get("_resumePayloads") or []
    if case.snapshot is None and list(held) != list(expected.answers):
        strays = [c for c in expected.classified if c.seq][:3]
        yield Violation("legacy.replayed-as-written", f"{case.name}: the loaded log folds to the answer list "
                        f"{held!r}; as written it is {list(expected.answers)!r} (every pre-0104 entry stays).",
                        tuple(c.seq for c in strays),
                        tuple(f"entry {c.index}, which answered no suspend point ({c.why}): it stays in the answer list"
                              for c in strays), f"the answer list as written, {list(expected.answers)!r} (ADR 0104 D2)")
    step = session.apply(_operation(case))
    label = f"{case.name} ({step.outcome.short()})"
    refused = not step.outcome.ok and step.outcome.reason == "ambiguous-legacy-answers"
    if expected.refused and not refused:
        ambiguity = expected.ambiguities[0]
        yield Violation("legacy.ambiguous-refused" if case.judged != "legacy.park-attribution" else case.judged,
                        f"{label}: the log holds an ambiguous human answer ({ambiguity.shape} of "
                        f"step {ambiguity.step_id!r}); it must be refused ambiguous-legacy-answers.",
                        (ambiguity.seq,) if ambiguity.seq else (),
                        (f"makes the answer of human step {ambiguity.step_id!r} ambiguous ({ambiguity.shape})",),
                        "refused ambiguous-legacy-answers, with nothing appended (ADR 0104 D2)")
    if refused and not expected.refused:
        parks = [e["seq"] for e in step.log_before if e["type"] == "EXECUTION_SUSPENDED"
                 and isinstance(e["payload"], dict) and isinstance((e["payload"].get("condition") or {}).get("stepId"), str)]
        yield Violation(case.judged if case.judged == "legacy.park-attribution" else "legacy.ambiguous-refused",
                        f"{label}: refused ambiguous-legacy-answers, but no human step's answer is ambiguous here.",
                        tuple(parks[-1:]), tuple("the newest human park: credited to the step its condition.stepId "
                                                 "names, it leaves no answer ambiguous" for _ in parks[-1:]),
                        "accepted: with each park attributed as ADR 0104 D2 says, nothing here is ambiguous")
    if refused and step.log_after != step.log_before:
        yield Violation("legacy.ambiguous-refused", f"{label}: refused, but the log changed.")
    said = set(warned(session, "x"))
    if said != set(expected.warned):
        yield Violation(case.judged if case.judged != "legacy.ambiguous-refused" else "legacy.classified",
                        f"{WARNING_MARK}{label}: warned {sorted(said)}, but the entries that answered no suspend point are "
                        f"{[(c.index, c.why, c.verdict) for c in expected.classified]}: warn {sorted(expected.warned)}.")
    if step.outcome.ok:
        yield from _as_written(step, label)


def _as_written(step: Step, label: str) -> Iterator[Violation]:
    """Every gate the run passed received the entry at its index (ADR 0057; D2: as written)."""
    entries = answers_of(step.state_after or {})  # with ADR 0057's legacy fallback
    for event in step.log_after[len(step.log_before):]:
        fact = event["payload"] if event["type"] == "loomcheck.observed" else None
        if isinstance(fact, dict) and isinstance(fact.get("gate"), int):
            index = fact["gate"]
            if index >= len(entries) or entries[index] != fact.get("value"):
                held = entries[index] if index < len(entries) else 'nothing'
                yield Violation("legacy.replayed-as-written",
                                f"{label}: suspend point {index} ({fact.get('on')}) received {fact.get('value')!r}, "
                                f"but the answer list holds {held!r} at that index.", (event["seq"],),
                                ("the suspend point's observation of what it passed with",),
                                f"suspend point {index} passes with entry {index} of the answer list as written, "
                                f"{held!r} (ADR 0104 D2: every pre-0104 entry stays)")


def _downgrade(session: Session) -> list[Violation]:
    """ADR 0104 D2, downgrade: a null resume the kernel itself writes (an in-doubt verdict),
    folded by the pre-1.20 rule (every EXECUTION_RESUMED is an entry), gains a null entry
    the next gate would receive. A violation here is the hazard shown, never a failure."""
    program = {"body": [{"op": "step", "id": "n", "kind": "non-idempotent",
                         "crash": {"at": "after-effect", "attempts": [1]}},
                        {"op": "suspend", "on": "go1"}, {"op": "complete"}]}
    session.reset()
    session.apply(Define("f", program))
    session.apply(Start("x", "f", None))
    session.apply(Recover("x"))
    session.apply(Resume("x", IN_DOUBT_GATE, {"stepId": "n", "resolution": "succeeded", "output": "ok"}))
    log = session.read_log("x")
    nulls = [e["seq"] for e in log if e["type"] == "EXECUTION_RESUMED" and e["payload"] is None]
    old_entries = [e["payload"] for e in log if e["type"] == "EXECUTION_RESUMED"]  # the pre-1.20 fold
    now = ((session.read_state("x").get("variables") or {}).get("_resumePayloads")) or []
    if nulls and len(old_entries) > len(now):
        return [Violation("hazard.downgrade", f"the kernel wrote EXECUTION_RESUMED(null) at seq {nulls[0]} for an "
                          f"in-doubt verdict; a pre-1.20 kernel folds the answer list {old_entries!r} where this "
                          f"one holds {now!r}, and would pass go1 with null: settle such executions before a "
                          f"rollback.", tuple(nulls))]
    return []
