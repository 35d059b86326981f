"""The explorer's finite alphabet: scenarios of a few flows each, and the operations
("letters") that may be applied to them in any order. Letters are concrete operations,
so a failing history is a regression log as it stands. What each scenario reaches and
why: docs/model-checking.md#scenarios-and-letters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from loomcheck.contract.needs import operations_need
from loomcheck.contract.script import (
    AdvanceClock,
    Define,
    Operation,
    Recover,
    RecoverAbandoned,
    Restart,
    Resume,
    ResumeAs,
    Start,
)
from loomcheck.spec.names import IN_DOUBT_GATE, TIMER_FIRED
from loomcheck.spec.programs import LANGUAGE

A, B = {"answer": "A"}, {"answer": "B"}  # two answer classes: enough to tell one entry from another (ADR 0057)
LEGACY_INPUT = {"id": "a"}
UNSTORABLE = {"id": "\ud800"}  # a lone surrogate: valid JSON text that no UTF-8 store can hold (invalid-input, -payload)


@dataclass(frozen=True)
class Scenario:
    name: str
    setup: tuple[Operation, ...]
    letters: tuple[Operation, ...]
    purpose: str
    # Its states never run out (the clock moves, each migration appends): explored last, so the
    # scenarios that reach a fixpoint leave it their unused time.
    grows: bool = False

    @property
    def requires(self) -> frozenset[str]:
        """Derived from its operations and programs (contract/needs.py): every letter may be applied."""
        return frozenset(operations_need(self.setup + self.letters))

    def available(self, features: frozenset[str]) -> bool:
        return self.requires <= features


def program(*body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"language": LANGUAGE, "body": list(body), **extra}


def gate(name: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"op": "suspend", "on": name, **extra}, {"op": "observe"}]


def _common(execution: str, gates: tuple[str, ...], recover: bool) -> list[Operation]:
    """Answers of two classes to each gate, a wrong gate, a kernel type; a recovery."""
    letters: list[Operation] = []
    for name in gates:
        letters += [Resume(execution, name, A), Resume(execution, name, B)]
    letters += [Resume(execution, "nowhere", A), Resume(execution, "EXECUTION_RESUMED", A)]
    if recover:
        letters.append(Recover(execution))
    return letters


def scenarios(features: frozenset[str]) -> list[Scenario]:
    """Every scenario, in a fixed order; `available` filters by features."""
    found = [make(features) for make in SCENARIOS]
    return sorted((s for s in found if s.available(features)), key=lambda s: s.grows)  # stable: order kept otherwise


def _restart(features: frozenset[str]) -> tuple[Operation, ...]:
    return (Restart(),) if "restart" in features else ()


def _two_gates(features: frozenset[str]) -> dict[str, Any]:
    """Two gates with a step between that crashes on its first attempt, when the kernel can recover."""
    crash = {"crash": {"at": "before-effect", "attempts": [1]}} if "recover" in features else {}
    return program(*gate("go1"), {"op": "step", "id": "s1", "output": 1, **crash}, *gate("go2"),
                   {"op": "complete", "output": "done"})


def two_gates(features: frozenset[str]) -> Scenario:
    has_recover = "recover" in features
    return Scenario(
        "two-gates", (Define("f", _two_gates(features)),),
        (Start("x0", "f", LEGACY_INPUT), Start("x0", "undeployed", LEGACY_INPUT), Start("x0", "f", UNSTORABLE),
         *_common("x0", ("go1", "go2"), has_recover), Resume("x0", "go1", UNSTORABLE["id"]),
         *((RecoverAbandoned(),) if has_recover else ())),
        "ADR 0057 and 0104 D1: two gates with a step between that crashes on its first attempt "
        "(when the kernel can recover): every answer, wrong gate, kernel type and recovery in every order.")


def three_gates(features: frozenset[str]) -> Scenario:
    return Scenario(
        "three-gates",
        (Define("g", program(*gate("go1"), {"op": "step", "id": "s1", "output": 1,
                                            "crash": {"at": "before-effect", "attempts": [1, 2]}},
                             *gate("go2"), {"op": "step", "id": "s2", "output": 2,
                                            "crash": {"at": "after-effect", "attempts": [1]}},
                             *gate("go3"), {"op": "complete", "output": "done"})),),
        (Start("x0", "g", LEGACY_INPUT), *_common("x0", ("go1", "go2", "go3"), True), RecoverAbandoned(),
         *_restart(features)),
        "ADR 0057 and 0104 D1 at three gates: steps that crash before and after their effect, twice, "
        "so recoveries interleave with answers at every gate.")


def two_executions(features: frozenset[str]) -> Scenario:
    return Scenario(
        "two-executions", (Define("f", _two_gates(features)),),
        (Start("x0", "f", LEGACY_INPUT), Start("x1", "f", LEGACY_INPUT), Resume("x0", "go1", A),
         Resume("x1", "go1", B), Resume("x0", "go2", B), Resume("x1", "go2", A), Recover("x0"),
         RecoverAbandoned(), *_restart(features)),
        "ADR 0104 D4: recovery across executions re-drives the crashed one and skips the parked one, "
        "before and after the runtime restarts on the same store.")


def in_doubt(features: frozenset[str]) -> Scenario:
    return Scenario(
        "in-doubt",
        (Define("d", program({"op": "step", "id": "charge", "kind": "non-idempotent", "output": "paid",
                              "crash": {"at": "after-effect", "attempts": [1, 2]}}, *gate("go1"),
                             {"op": "complete"})),),
        (Start("x0", "d", LEGACY_INPUT), Recover("x0"),
         *(Resume("x0", IN_DOUBT_GATE, {"stepId": "charge", "resolution": r, "output": "manual"})
           for r in ("succeeded", "failed", "retry-fresh")),
         Resume("x0", IN_DOUBT_GATE, {"stepId": "other", "resolution": "succeeded"}),
         Resume("x0", IN_DOUBT_GATE, A), Resume("x0", "go1", A)),
        "ADR 0104 D1 in doubt: a verdict answers one park of one attempt; a non-verdict is refused.")


def human_step(features: frozenset[str]) -> Scenario:
    return Scenario(
        "human-step",
        (Define("h", program({"op": "step", "id": "review", "kind": "human", "on": "HumanInput"},
                             {"op": "observe"}, *gate("go3"), {"op": "complete"})),),
        (Start("x0", "h", LEGACY_INPUT), Resume("x0", "HumanInput", A), Resume("x0", "HumanInput", B),
         Resume("x0", "go3", A), Resume("x0", "nowhere", A),
         *((Recover("x0"),) if "recover" in features else ())),
        "ADR 0104 D1: a human step is a suspend point; its answer is consumed again on every re-run.")


def timed_gate(features: frozenset[str]) -> Scenario:
    return Scenario(
        "timed-gate",
        (Define("t", program(*gate("go1", timeout=1_000), *gate("go2"), {"op": "complete"})),),
        (Start("x0", "t", LEGACY_INPUT), AdvanceClock(1_000), Resume("x0", TIMER_FIRED, {"approved": True}),
         Resume("x0", "go1", A), Resume("x0", "go2", B)),
        "ADR 0117 D5: a timed gate answered by the kernel's timer, a caller's forged wake, or an approver.",
        grows=True)


def parallel_gates(features: frozenset[str]) -> Scenario:
    return Scenario(
        "parallel-gates",
        (Define("p", program({"op": "parallel", "branches": [{"op": "suspend", "on": "go1"},
                                                             {"op": "suspend", "on": "go2"}]},
                             {"op": "observe"}, {"op": "complete"})),),
        (Start("x0", "p", LEGACY_INPUT), Resume("x0", "go1", A), Resume("x0", "go2", B),
         Resume("x0", "go1", B)),
        "ADR 0104 D1: parallel suspend points take answers in call order.")


def migration(features: frozenset[str]) -> Scenario:
    return Scenario(
        "migration",
        (Define("m", program({"op": "input"}, *gate("go1"),
                             {"op": "step", "id": "s1", "output": 1,
                              "crash": {"at": "before-effect", "attempts": [1]}}, *gate("go2"),
                             {"op": "complete"})),
         Define("n", program({"op": "input"}, *gate("go1"), *gate("go2"), {"op": "complete"}))),
        (Start("x0", "m", LEGACY_INPUT), Resume("x0", "go1", A), Resume("x0", "go2", B), Recover("x0"),
         ResumeAs("x0", "n", "go1", A, {"transformState": {"name": "rename", "from": "id", "to": "key"}}),
         ResumeAs("x0", "n", "Redeploy", None, {"transformState": {"name": "fail", "message": "cannot"}}),
         # ADR 0056 D3's other refusals: a transform that returns nothing, one not registered
         ResumeAs("x0", "n", "Redeploy", None, {"transformState": {"name": "nothing"}}),
         ResumeAs("x0", "n", "Redeploy", None, {"transformState": {"name": "no-such-transform"}}),
         ResumeAs("x0", "n", "Redeploy", None)),
        "ADR 0056 and 0104 D1: resumeAs onto parked, crashed and completed executions, with and "
        "without a state transform.", grows=True)


def emit_guard(features: frozenset[str]) -> Scenario:
    guarded = _guarded_bodies()
    return Scenario(
        "emit-guard",
        tuple(Define(f"e{i}", program(*body, *gate("go1"), {"op": "complete"})) for i, body in enumerate(guarded)),
        # One execution, started on any of the flows: each start is a first letter of its own
        # history, so depth 1 reaches every emit without 2**9 orders of independent starts.
        (*(Start("x0", f"e{i}", LEGACY_INPUT) for i in range(len(guarded))),
         Resume("x0", "go1", A), *((Recover("x0"),) if "recover" in features else ())),
        "ADR 0104 D1's emit guard: a forged kernel fact, an invalid meter and quota, a reserved or "
        "conflicting decision, and the allowed facts, from flow and effect code.")


def _guarded_bodies() -> list[list[dict[str, Any]]]:
    step = lambda emits: {"op": "step", "id": "tool", "output": None, "emits": emits}  # noqa: E731
    decision = lambda i, c: {"type": "DECISION_RECORDED", "payload": {"decisionId": i, "choice": c}}  # noqa: E731
    return [
        [{"op": "emit", "type": "EXECUTION_RESUMED", "payload": {"forged": 1}}],
        [step([{"type": "RESOURCE_METERED", "payload": {"tokens": -1}}])],
        [step([{"type": "QUOTA_EXCEEDED", "payload": {"reason": "q" * 1025}}])],
        [step([{"type": "RESOURCE_METERED", "payload": {"tokens": 5}},
               {"type": "QUOTA_EXCEEDED", "payload": {"reason": "over"}},
               {"type": "EGRESS_DENIED", "payload": {"host": "h"}}])],
        [step([decision("__loom_indoubt__:tool:1", 1)])],
        [step([decision("d1", 1)]), {"op": "decide", "id": "d1", "choice": 2}],
        [{"op": "emit", **decision("d2", 1)}, {"op": "emit", **decision("d2", 1)},
         {"op": "emit", **decision("d2", 2)}],
        [{"op": "decide", "id": "__loom_discard__:h", "choice": 0}],
        [{"op": "emit", "type": "SAFETY_BLOCKED", "payload": [1]}],
        [step([{"type": "DECISION_RECORDED", "payload": {"choice": 1}}])],
    ]


# Every scenario's maker, in the order the explorer takes them (the growing ones go last).
SCENARIOS: tuple[Callable[[frozenset[str]], Scenario], ...] = (
    two_gates, three_gates, two_executions, in_doubt, human_step, timed_gate, parallel_gates, migration, emit_guard)
