"""The legacy-override corpus (ADR 0104 D2 through the driver): an operator's signed
override of an ambiguous human step, refused when it is not verified, not applicable or
malformed; recorded and applied when it is, live and on the replay in a new process."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from loomcheck.contract import proofs
from loomcheck.contract.script import Configure, Define, Load, Recover, Restart, Resume
from loomcheck.contract.session import Session, Step
from loomcheck.corpora.legacy_scenarios import (
    ACTOR,
    FLOW,
    HUMAN,
    PAIR,
    REPARKED,
    SECRET,
    START,
    STRAY_FIRST,
    events,
    guarded,
    record_case,
)
from loomcheck.corpora.result import CorpusResult, gated
from loomcheck.properties.registry import Violation
from loomcheck.spec.names import TIMER_FIRED

OVERRIDE = ("legacy.override-authenticated", "legacy.override-recorded", "legacy.override-applied")


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
        record_case(result, "refused", _refused(step, auth, f"an override ({label})", reasons), session)

    for label, secure, reasons, options in refusals:
        gated(result, lambda: refused(label, secure, reasons, options))

    def uncovered() -> None:
        _loaded(session, STRAY_FIRST, True, gates=("go1", "go2"))  # the authenticator does not cover the human gate
        step = session.apply(Resume("x", HUMAN, "yes", {"discardLegacyAnswers": discard}))
        record_case(result, "refused", _refused(step, auth, "an override on a gate the authenticator does not verify",
                                          ("discard-unverified",)), session)

    def on_a_wake() -> None:
        # A timer's wake is the kernel's own resume: an override on one is refused whoever sends it.
        session.require({"timers"}, "a timer's wake")  # without timers TIMER_FIRED is just a kernel type
        wake_at = 1_800_000_001_000
        _loaded(session, [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go1", "wakeAt": wake_at}})], True)
        step = session.apply(Resume("x", TIMER_FIRED, {"wakeAt": wake_at}, {"discardLegacyAnswers": discard}))
        record_case(result, "refused", _refused(step, auth, "an override on a timer's wake",
                                          ("discard-on-kernel-resume", "timer-wake-not-system")), session)

    def finished() -> None:
        # A stray in a finished log is harmless (spec/legacy-logs.md): nothing re-runs it, so an
        # override there, like any resume, is refused before a scan could matter.
        _loaded(session, [START, *PAIR, ("EXECUTION_COMPLETED", {"output": None})], True)
        step = session.apply(Resume("x", HUMAN, "yes", _signed(session, "yes", discard)))
        record_case(result, "refused", _refused(step, auth, "an override on a completed execution",
                                          ("not-suspended", "terminal")), session)

    def recovered() -> None:
        _loaded(session, STRAY_FIRST[:-2] + [("STEP_STARTED", {"stepId": "a", "attempt": 1})], True)  # crashed
        step = session.apply(Recover("x"))
        record_case(result, "refused", _refused(step, "legacy.ambiguous-refused", "a recovery of an ambiguous log",
                                          ("ambiguous-legacy-answers",)), session)

    def honoured(log: list[tuple[str, Any]], count: int, answer: str) -> None:
        _loaded(session, log, True)
        record_case(result, "honoured", _honoured(session, count, answer), session)

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


run_legacy_override = guarded(_override_run, "legacy.override-authenticated")
