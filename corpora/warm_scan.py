"""The warm-scan corpus (ADR 0104 amendment R1a through the driver): a runtime that keeps
a clean scan between resumes decides as a fresh scan of the same log would, after an old
node's writes, an erase, retention or a refusal; and the residuals R1a admits."""

from __future__ import annotations

from typing import Any, Callable

from loomcheck.contract.script import Define, Load, Recover, Resume, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.corpora.legacy_scenarios import (
    HUMAN,
    OLD_PARK,
    PAIR,
    START,
    events,
    guarded,
    record_case,
    warned,
)
from loomcheck.corpora.result import CorpusResult, gated
from loomcheck.properties.registry import Violation

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
    warnings = {x: warned(session, x) for x in ("w", "c")}
    shapes = {x: [e["type"] for e in session.read_log(x)] for x in ("w", "c")}
    same = (outcomes["w"], warnings["w"], shapes["w"]) == (outcomes["c"], warnings["c"], shapes["c"])
    found = [] if same else [Violation(invariant, f"{label}: the warm runtime decided {outcomes['w']} and warned "
                                                  f"{warnings['w']}, a fresh scan {outcomes['c']} and warned "
                                                  f"{warnings['c']}.")]
    if residual:
        found = [Violation(invariant, v.message + " This is the residual R1a admits.") for v in found]
    record_case(result, label, iter(found), session, scripted=False)


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


run_warm_scan = guarded(_warm_run, "scan.incremental-equals-full")
