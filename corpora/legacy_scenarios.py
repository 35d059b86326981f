"""ADR 0104 D2 and R1a through the driver: the operator's override, the warning
memory, and the warm scan. Each corpus builds legacy logs by hand (as an older
node of the fleet wrote them), loads them into the kernel, and judges what it
does with them against spec/legacy-logs.md. The fleet corpus (properties/fleet.py)
covers the classification itself on generated logs."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from loomcheck.contract.script import Configure, Define, Load, Recover, Restart, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step
from loomcheck.contract.shown import brief
from loomcheck.corpora.result import CorpusResult, gated
from loomcheck.properties.registry import Violation
from loomcheck.contract import proofs
from loomcheck.spec.names import TIMER_FIRED, WARN_MEMORY

ACTOR, SECRET = "operator", "operator-approver-secret-01"
HUMAN = "HumanInput"
START = ("EXECUTION_STARTED", {"flowId": "f", "input": None})
PAIR = [("EXECUTION_RECOVERED", {}), ("EXECUTION_RESUMED", {})]  # what a pre-0104 recovery wrote
OLD_PARK = ("EXECUTION_SUSPENDED", {"condition": {"on": HUMAN}})  # a pre-0104 human park: no stepId
NEW_PARK = ("EXECUTION_SUSPENDED", {"condition": {"on": HUMAN, "stepId": "h"}})
FLOW = {"body": [{"op": "suspend", "on": "go1"}, {"op": "observe"}, {"op": "step", "id": "h", "kind": "human"},
                 {"op": "observe"}, {"op": "suspend", "on": "go2"}, {"op": "observe"}, {"op": "complete"}]}

# A stray before the human step's first start (a recovery pair an old node wrote, which
# go1 then passed with), then the new kernel started the step and parked at it: D2's
# second shape, and the known false positive (a gate passthrough consumed the stray).
STRAY_FIRST = [START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1}), NEW_PARK]
# An old node's human step: parked, answered, re-ran its effect and parked again (D2's first shape).
REPARKED = [START, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1"}}), ("go1", "g1"), ("EXECUTION_RESUMED", "g1"),
            ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK, (HUMAN, "old"), ("EXECUTION_RESUMED", "old"),
            ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK]


def events(pairs: list[tuple[str, Any]], first: int = 1) -> list[dict[str, Any]]:
    return [{"seq": first + i, "type": t, "payload": p} for i, (t, p) in enumerate(pairs)]


def _guarded(run: Callable[[Session, CorpusResult], None], fallback: str) -> Callable[..., CorpusResult]:
    def corpus(session: Session, invariant_ids: tuple[str, ...]) -> CorpusResult:
        result = CorpusResult()
        try:
            run(session, result)
        except ImplementationFailed as failed:
            if failed.reason:
                raise  # its process hung, died or broke the protocol: a finding of the run, not a violation
            result.violations.append(Violation(fallback, f"the implementation failed: {failed}"))
        result.violations = [v for v in result.violations if v.invariant in invariant_ids]
        return result
    return corpus


def _case(result: CorpusResult, category: str, found: Iterator[Violation], session: Session,
          scripted: bool = True) -> None:
    """One case. `scripted`: the session's script alone reproduces it. Cases that also
    append as another node, truncate, erase or read warnings are not (yet) scripts, so
    their failures come with the corpus's description instead of a counterexample file."""
    violations = list(found)  # first: a case that reaches an undeclared feature is skipped, not counted
    result.cases += 1
    result.per_category[category] = result.per_category.get(category, 0) + 1
    if violations and result.operations is None and scripted:
        result.operations = session.script()
    result.violations.extend(violations)


def _loaded(session: Session, log: list[tuple[str, Any]], secure: bool = True,
            gates: tuple[str, ...] = (HUMAN, "go1", "go2")) -> None:
    session.reset()
    if secure:
        session.apply(Configure({"authenticator": {"gates": list(gates), "keys": {ACTOR: SECRET}}}))
    session.apply(Define("f", FLOW))
    session.apply(Load("x", events(log)))


def _refused(step: Step, invariant: str, what: str, reasons: tuple[str, ...]) -> Iterator[Violation]:
    should = f"refused {' or '.join(reasons)}, with nothing appended"
    if step.outcome.ok:
        yield Violation(invariant, f"{what} was accepted; it must be refused ({' or '.join(reasons)}).",
                        *_addressed(step, what), should)
    elif step.outcome.reason not in reasons:
        yield Violation(invariant, f"{what} was refused {step.outcome.reason}, not {' or '.join(reasons)}.",
                        *_addressed(step, what), should)
    if step.log_after != step.log_before:
        added = [e.get("seq") for e in step.log_after[len(step.log_before):]][:4]
        yield Violation(invariant, f"{what} was refused but the log changed: a refusal appends nothing.",
                        tuple(added), tuple("appended although the operation was refused" for _ in added), should)


def _addressed(step: Step, what: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The park a resume was addressed to, or the log's last event for any other operation."""
    parks = [e for e in step.log_before if e.get("type") == "EXECUTION_SUSPENDED"]
    if isinstance(step.op, Resume) and parks:
        return (parks[-1]["seq"],), (f"the park {what} was addressed to",)
    if step.log_before:
        return (step.log_before[-1]["seq"],), (f"where the log stood when {what} came",)
    return (), ()


# --------------------------------------------------------------------- the override

OVERRIDE = ("legacy.override-authenticated", "legacy.override-recorded", "legacy.override-applied")


def _signed(session: Session, payload: Any, discard: Any, gate: str = HUMAN) -> dict[str, Any]:
    parked = session.parked_at_sequence("x") or 0
    claim = proofs.Claim("x", parked, ACTOR, session.trace.now + 3_600_000, gate, payload, discard)
    proof = proofs.sign(session, claim, SECRET)
    return {"proof": proof, "discardLegacyAnswers": discard}


def _override_run(session: Session, result: CorpusResult) -> None:
    discard = {"stepId": "h", "count": 0}
    auth, recorded, applied = OVERRIDE
    refusals: list[tuple[str, bool, tuple[str, ...], Callable[[], dict[str, Any]]]] = [
        ("no authenticator", False, ("discard-unverified",), lambda: {"discardLegacyAnswers": discard}),
        ("unsigned", True, ("unauthenticated", "discard-unverified"), lambda: {"discardLegacyAnswers": discard}),
        ("attached after signing", True, ("unauthenticated", "discard-unverified"),
         lambda: {**_signed(session, "yes", None), "discardLegacyAnswers": discard}),
        ("count altered after signing", True, ("unauthenticated", "discard-unverified"),
         lambda: {**_signed(session, "yes", discard), "discardLegacyAnswers": {"stepId": "h", "count": 1}}),
        ("a step with no ambiguity", True, ("discard-without-ambiguity",),
         lambda: _signed(session, "yes", {"stepId": "go1", "count": 0})),
        ("malformed", True, ("invalid-discard", "unauthenticated", "discard-unverified"),
         lambda: {"discardLegacyAnswers": {"stepId": "h", "count": -1}}),
        # With no authenticator nothing else stands in the way: the shape itself is refused.
        ("malformed, no authenticator", False, ("invalid-discard", "discard-unverified"),
         lambda: {"discardLegacyAnswers": {"stepId": "h", "count": -1}}),
    ]
    def refused(label: str, secure: bool, reasons: tuple[str, ...], options: Callable[[], dict[str, Any]]) -> None:
        _loaded(session, STRAY_FIRST, secure)
        step = session.apply(Resume("x", HUMAN, "yes", options()))
        _case(result, "refused", _refused(step, auth, f"an override ({label})", reasons), session)

    for label, secure, reasons, options in refusals:
        gated(result, lambda: refused(label, secure, reasons, options))

    def uncovered() -> None:
        _loaded(session, STRAY_FIRST, True, gates=("go1", "go2"))  # the authenticator does not cover the human gate
        step = session.apply(Resume("x", HUMAN, "yes", {"discardLegacyAnswers": discard}))
        _case(result, "refused", _refused(step, auth, "an override on a gate the authenticator does not verify",
                                          ("discard-unverified",)), session)

    def on_a_wake() -> None:
        # A timer's wake is the kernel's own resume: an override on one is refused whoever sends it.
        session.require({"timers"}, "a timer's wake")  # without timers TIMER_FIRED is just a kernel type
        wake_at = 1_800_000_001_000
        _loaded(session, [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1", "wakeAt": wake_at}})], True)
        step = session.apply(Resume("x", TIMER_FIRED, {"wakeAt": wake_at}, {"discardLegacyAnswers": discard}))
        _case(result, "refused", _refused(step, auth, "an override on a timer's wake",
                                          ("discard-on-kernel-resume", "timer-wake-not-system")), session)

    def finished() -> None:
        # A stray in a finished log is harmless (spec/legacy-logs.md): nothing re-runs it, so an
        # override there, like any resume, is refused before a scan could matter.
        _loaded(session, [START, *PAIR, ("EXECUTION_COMPLETED", {"output": None})], True)
        step = session.apply(Resume("x", HUMAN, "yes", _signed(session, "yes", discard)))
        _case(result, "refused", _refused(step, auth, "an override on a completed execution",
                                          ("not-suspended", "terminal")), session)

    def recovered() -> None:
        _loaded(session, STRAY_FIRST[:-2] + [("STEP_STARTED", {"stepId": "a", "attempt": 1})], True)  # crashed
        step = session.apply(Recover("x"))
        _case(result, "refused", _refused(step, "legacy.ambiguous-refused", "a recovery of an ambiguous log",
                                          ("ambiguous-legacy-answers",)), session)

    def honoured(log: list[tuple[str, Any]], count: int, answer: str) -> None:
        _loaded(session, log, True)
        _case(result, "honoured", _honoured(session, count, answer), session)

    for case in (uncovered, on_a_wake, finished, recovered):
        gated(result, case)
    for log, count, answer in ((STRAY_FIRST, 0, "yes"), (REPARKED, 1, "new")):
        gated(result, lambda: honoured(log, count, answer))


def _honoured(session: Session, count: int, answer: str) -> Iterator[Violation]:
    auth, recorded, applied = OVERRIDE
    discard = {"stepId": "h", "count": count}
    plain = session.apply(Resume("x", HUMAN, answer, _signed(session, answer, None)))
    yield from _refused(plain, "legacy.ambiguous-refused", "a signed answer to an ambiguous human step "
                        "without an override", ("ambiguous-legacy-answers",))
    step = session.apply(Resume("x", HUMAN, answer, _signed(session, answer, discard)))
    if not step.outcome.ok:
        yield Violation(auth, f"a signed, verified override {discard} for the ambiguous step was refused "
                              f"({step.outcome.reason}: {step.outcome.message[:80]}).")
        return
    appended = step.log_after[len(step.log_before):]
    decisions = [e["payload"] for e in appended if e["type"] == "DECISION_RECORDED"]
    wanted = {"decisionId": "__loom_discard__:h", "choice": count, "source": "operator"}
    if not any(isinstance(d, dict) and {k: d.get(k) for k in wanted} == wanted
               and ((d.get("rationale") or {}).get("approval") or {}).get("actor") == ACTOR
               and "verifiedBy" in ((d.get("rationale") or {}).get("approval") or {}) for d in decisions):
        cited = [e["seq"] for e in appended if e["type"] == "DECISION_RECORDED"] or [e["seq"] for e in appended[:1]]
        yield Violation(recorded, f"the honoured override recorded {decisions or 'no DECISION_RECORDED'}, not "
                                  f"{wanted} with rationale.approval {{actor, verifiedBy}}.", tuple(cited),
                        tuple("appended by the honoured override" for _ in cited),
                        f"DECISION_RECORDED {wanted} with rationale.approval {{actor, verifiedBy}}")
    frame = ((step.state_after or {}).get("steps") or {}).get("h") or {}
    if frame.get("status") != "completed" or frame.get("output") != answer:
        ends = [e["seq"] for e in step.log_after if e["type"] in ("STEP_COMPLETED", "EXECUTION_SUSPENDED")
                and isinstance(e["payload"], dict) and (e["payload"].get("stepId") == "h"
                                                        or (e["payload"].get("condition") or {}).get("stepId") == "h")][-1:]
        yield Violation(applied, f"after discarding {count} entr(y/ies) the human step should complete with "
                                 f"{answer!r}; it is {frame.get('status')} with {frame.get('output')!r}.", tuple(ends),
                        tuple("the human step's last record after the override" for _ in ends),
                        f"the human step completes with {answer!r}, the {count} discarded entr(y/ies) skipped")
    if "restart" not in session.features:
        return  # the replay in a new process: legacy.override-applied's, which needs feature "restart"
    session.apply(Restart())
    final = session.apply(Resume("x", "go2", "g2", _signed(session, "g2", None, gate="go2")))
    seen = [(e["payload"].get("on"), e["payload"].get("value")) for e in final.log_after
            if e["type"] == "loomcheck.observed" and isinstance(e["payload"], dict)]
    if not final.outcome.ok or (HUMAN, answer) not in seen or ("go2", "g2") not in seen:
        observed = [e["seq"] for e in final.log_after if e["type"] == "loomcheck.observed"][-3:]
        yield Violation(applied, f"on the replay in a new process the human step must take {answer!r} again "
                                 f"and go2 its own answer; observed {seen} ({final.outcome.short()}).", tuple(observed),
                        tuple("what a suspend point passed with on the replay" for _ in observed),
                        f"the human step takes {answer!r} again, and go2 'g2'")


run_legacy_override = _guarded(_override_run, "legacy.override-authenticated")


# --------------------------------------------------------------------- warnings

WARN_FLOW = {"body": [{"op": "suspend", "on": f"go{i}"} for i in range(1, 6)] + [{"op": "complete"}]}
# The stray passed go1 (a recovery before the first gate), and the execution parked at go2.
PASSED = [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}})]
AT_RISK = [START, *PAIR]  # crashed after an old node's recovery: its next gate will pass with {}


def _warned(session: Session, execution: str) -> list[str]:
    said = session.unscripted("warnings", lambda: session.driver.warnings(), needs=("legacy-scan",), data=True)
    if not isinstance(said, list) or not all(isinstance(w, dict) for w in said):
        raise ImplementationFailed("warnings", f"returned {brief(said)}, not a list of objects")
    return [str(w.get("verdict")) for w in said if w.get("executionId") == execution]


def _warnings_run(session: Session, result: CorpusResult) -> None:
    session.reset()
    session.apply(Define("f", WARN_FLOW))
    session.apply(Load("e0", events(PASSED)))
    session.apply(Resume("e0", "go2", 2))
    session.apply(Resume("e0", "go3", 3))
    _case(result, "once", _expect(_warned(session, "e0"), ["passed"], "legacy.warn-once",
                                  "two resumes of one execution with a passed stray"), session, scripted=False)
    gated(result, lambda: _bounded(session, result))


def _bounded(session: Session, result: CorpusResult) -> None:
    """WARN_MEMORY - 1 other (execution, verdict) pairs: e0's is still remembered. One more: forgotten."""
    for i in range(1, WARN_MEMORY + 1):
        session.unscripted("load", lambda: session.driver.load(f"e{i}", events(AT_RISK), None), needs=("load-log",))
        session.unscripted("recover", lambda: session.driver.recover(f"e{i}"), needs=("recover",))
        if i == WARN_MEMORY - 1:
            session.apply(Resume("e0", "go4", 4))
            _case(result, "bounded", _expect(_warned(session, "e0"), ["passed"], "legacy.warn-memory-bounded",
                                             f"e0 after {i} newer warnings (still remembered)"), session, False)
    others = sum(1 for i in (1, WARN_MEMORY) if _warned(session, f"e{i}") == ["at-risk"])
    if others != 2:
        result.violations.append(Violation("legacy.warn-memory-bounded", "a recovered execution with an unspent "
                                           "recovery stray did not warn at-risk exactly once"))
    session.apply(Resume("e0", "go5", 5))
    _case(result, "bounded", _expect(_warned(session, "e0"), ["passed", "passed"], "legacy.warn-memory-bounded",
                                     f"e0 after {WARN_MEMORY} newer warnings (forgotten, FIFO)"), session, False)


def _expect(actual: list[str], wanted: list[str], invariant: str, what: str) -> Iterator[Violation]:
    if actual != wanted:
        yield Violation(invariant, f"{what}: warned {actual}, expected {wanted}.")


run_legacy_warnings = _guarded(_warnings_run, "legacy.warn-once")


# --------------------------------------------------------------------- the warm scan (R1a)

WARM_FLOW = {"body": [{"op": "suspend", "on": "go1"}, {"op": "suspend", "on": "go2"},
                      {"op": "step", "id": "h", "kind": "human"}, {"op": "suspend", "on": "go3"}, {"op": "complete"}]}
# What an old node appends to an execution parked at go2: it answers go2, its run reaches the
# human step (a pre-0104 park), an operator answers it, and the old step re-runs and parks again.
OLD_NODE = [("go2", "v2"), ("EXECUTION_RESUMED", "v2"), ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK,
            (HUMAN, "a1"), ("EXECUTION_RESUMED", "a1"), ("STEP_STARTED", {"stepId": "h", "attempt": 1}), OLD_PARK]


def _warm_start(session: Session) -> None:
    session.apply(Define("f", WARM_FLOW))
    session.apply(Start("w", "f", None))
    session.apply(Resume("w", "go1", {}))     # a clean scan the warm runtime keeps (an answer that is {})


def _warm_twins(session: Session, result: CorpusResult, label: str, invariant: str,
                prepare: Callable[[], None], judge: Callable[[str], Any], residual: bool = False,
                setup: Callable[[Session], None] = _warm_start) -> None:
    """Warm: "w" scanned clean, then changed by `prepare`. Cold: "c", a copy of w's log loaded
    into the same runtime just before the judged operation. Both judged alike."""
    gated(result, lambda: _twins(session, result, label, invariant, prepare, judge, residual, setup))


def _twins(session: Session, result: CorpusResult, label: str, invariant: str, prepare: Callable[[], None],
           judge: Callable[[str], Any], residual: bool, setup: Callable[[Session], None]) -> None:
    session.reset()
    setup(session)
    prepare()
    session.apply(Load("c", [{"seq": i + 1, "type": e["type"], "payload": e["payload"]}
                             for i, e in enumerate(session.read_log("w"))]))
    if session.read_log("c") and session.read_log("c")[0]["seq"] != 1:
        raise ImplementationFailed("load", "a loaded log did not start at seq 1")
    outcomes = {x: judge(x) for x in ("w", "c")}
    warned = {x: _warned(session, x) for x in ("w", "c")}
    shapes = {x: [e["type"] for e in session.read_log(x)] for x in ("w", "c")}
    same = (outcomes["w"], warned["w"], shapes["w"]) == (outcomes["c"], warned["c"], shapes["c"])
    found = [] if same else [Violation(invariant, f"{label}: the warm runtime decided {outcomes['w']} and warned "
                                                  f"{warned['w']}, a fresh scan {outcomes['c']} and warned "
                                                  f"{warned['c']}.")]
    if residual:
        found = [Violation(invariant, v.message + " This is the residual R1a admits.") for v in found]
    _case(result, label, iter(found), session, scripted=False)


# Step t runs an idempotent effect, then two gates. A pre-0104 log parked right after t started:
# under this definition that park is a gate park; were t human, it would be t's (D2 attribution).
KIND_FLOW = {"body": [{"op": "step", "id": "t"}, {"op": "suspend", "on": "g"}, {"op": "suspend", "on": "g2"},
                      {"op": "complete"}]}


def _kind_start(session: Session) -> None:
    session.apply(Define("f", KIND_FLOW))
    session.apply(Load("w", events([START, ("STEP_STARTED", {"stepId": "t", "attempt": 1}),
                                    ("EXECUTION_SUSPENDED", {"condition": {"on": "g"}})])))
    session.apply(Resume("w", "g", "a1"))


def _append(session: Session, execution: str, pairs: list[tuple[str, Any]]) -> None:
    outcome = session.unscripted_outcome("append_events", lambda: session.driver.append_events(execution, events(pairs)),
                                         needs=("legacy-scan",))
    if not outcome.ok:
        raise ImplementationFailed("append_events", f"refused {outcome.reason}")


def _warm_run(session: Session, result: CorpusResult) -> None:
    def resume(gate: str, payload: Any) -> Callable[[str], Any]:
        return lambda x: session.apply(Resume(x, gate, payload)).outcome.short()

    def recover(x: str) -> Any:
        return session.apply(Recover(x)).outcome.short()

    def to_human() -> None:  # the warm scan now reaches the go2 park; the run parks at the human step
        session.apply(Resume("w", "go2", "v2"))

    _warm_twins(session, result, "an old node re-parked the human step", "scan.incremental-equals-full",
                lambda: _append(session, "w", OLD_NODE), resume(HUMAN, "a2"))
    _warm_twins(session, result, "an old node's clean writes", "scan.incremental-equals-full",
                lambda: _append(session, "w", OLD_NODE[:4]), resume(HUMAN, "a1"))

    def rewound() -> None:  # erased, and re-created SHORTER than scanned by an old node, a stray first
        to_human()
        session.erase("w")
        _append(session, "w", [START, *PAIR, ("STEP_STARTED", {"stepId": "h", "attempt": 1})])
    _warm_twins(session, result, "a log erased and re-created shorter", "scan.invalidated", rewound, recover)

    def retained_past(x: str) -> Any:  # the prefix retained past what the warm runtime scanned
        _truncate(session, x, session.read_log(x)[-1]["seq"])
        return recover(x)
    _warm_twins(session, result, "a prefix retained past the scanned sequence", "scan.invalidated",
                lambda: _append(session, "w", PAIR), retained_past)

    def refused_first() -> None:
        session.apply(Resume("w", "go1", "wrong gate"))   # refused: the cache must be dropped
        _append(session, "w", OLD_NODE)
    _warm_twins(session, result, "a refusal, then an old node's re-park", "scan.invalidated", refused_first,
                resume(HUMAN, "a2"))

    def retained_within(x: str) -> Any:  # R1a residual 1: up to what the warm runtime already scanned
        park = max(e["seq"] for e in session.read_log(x) if e["type"] == "EXECUTION_SUSPENDED"
                   and (e["payload"].get("condition") or {}).get("on") == "go2")
        _truncate(session, x, park)
        return session.apply(Resume(x, HUMAN, "a1")).outcome.short()
    _warm_twins(session, result, "retention after a clean scan", "residual.truncate-after-clean-scan",
                to_human, retained_within, residual=True)

    def kind_changed() -> None:  # R1a residual 3: step t becomes human (a tool registered) between resumes
        session.apply(Define("f", {"body": [{"op": "step", "id": "t", "kind": "human", "on": "g"},
                                            *KIND_FLOW["body"][1:]]}))
        _append(session, "w", [("STEP_STARTED", {"stepId": "t", "attempt": 1}),
                               ("EXECUTION_SUSPENDED", {"condition": {"on": "g2"}})])
    _warm_twins(session, result, "a step kind changed between resumes", "residual.step-kind-between-feeds",
                kind_changed, resume("g2", "x"), residual=True, setup=_kind_start)

    def recreated() -> None:  # R1a residual 2: re-created at least as long, a stray early in it
        session.erase("w")
        _append(session, "w", [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}})])
    _warm_twins(session, result, "a log erased and re-created as long", "residual.recreated-log", recreated,
                resume("go2", "v2"), residual=True)


def _truncate(session: Session, execution: str, upto: int) -> None:
    outcome = session.unscripted_outcome("truncate_prefix", lambda: session.driver.truncate_prefix(execution, upto),
                                         needs=("retention",))
    if not outcome.ok:
        raise ImplementationFailed("truncate_prefix", f"refused {outcome.reason}")


run_warm_scan = _guarded(_warm_run, "scan.incremental-equals-full")
