"""The state machine's kernel core: the run it is configured for, its bundles of flows and
executions, applying an operation and judging the step, reading what the subject shows,
and the rules that start executions. The rules of each ADR extend it; gate_machine.py
composes them and configures the result for one run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, NoReturn, TypeVar

import hypothesis
from hypothesis.stateful import Bundle, RuleBasedStateMachine, multiple, precondition, rule

from loomcheck.contract.logview import park_seq as newest_park
from loomcheck.contract.script import Define, Operation, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step
from loomcheck.machine import strategies as s
from loomcheck.machine.findings import (
    ImplementationFailedInRun,
    TransportFaultInRun,
    in_run,
    violation_type,
)
from loomcheck.properties.checks import check_step

RuleFunction = TypeVar("RuleFunction", bound=Callable[..., Any])


@dataclass
class Counters:
    examples: int = 0
    steps: int = 0
    on_example: Callable[[int], None] | None = None
    first_failure: dict[str, int] = field(default_factory=dict)  # invariant -> example number it first failed in
    crashes: list[ImplementationFailedInRun] = field(default_factory=list)  # driver exceptions, one per example


@dataclass(frozen=True)
class MachineConfig:
    """What one run of the machine is given: the subject's session, the invariants it judges,
    and the counters it reports to. Set once, on the class a run makes (gate_machine.py)."""

    session: Session
    invariant_ids: tuple[str, ...]
    counters: Counters

    @property
    def features(self) -> frozenset[str]:
        return self.session.features


def supports(*needed: str) -> Callable[[RuleFunction], RuleFunction]:
    """A rule that runs only on a subject declaring every feature it needs."""
    return precondition(lambda machine: set(needed) <= machine.config.features)


class KernelRules(RuleBasedStateMachine):
    config: ClassVar[MachineConfig]
    flows = Bundle("flows")
    executions = Bundle("executions")

    def __init__(self) -> None:
        super().__init__()
        counters = self.config.counters
        counters.examples += 1
        if counters.on_example is not None:
            counters.on_example(counters.examples)
        self.flow_count = 0
        self.execution_count = 0
        try:
            self.session.reset()
        except ImplementationFailed as failed:
            raise in_run(failed, []) from None

    @property
    def session(self) -> Session:
        return self.config.session

    @property
    def features(self) -> frozenset[str]:
        return self.config.features

    def end_example(self, failed: ImplementationFailed) -> NoReturn:
        """A driver exception ends its example only: it is kept as one finding (its operation and
        script), and the invariants go on being judged by the other examples. A fault of the
        process (a hang, a death, garbage) stops the run instead: every further example costs a restart."""
        operations = self.session.script()
        if failed.reason:
            raise TransportFaultInRun(failed, operations) from None
        self.config.counters.crashes.append(ImplementationFailedInRun(failed, operations))
        hypothesis.reject()
        raise AssertionError("unreachable")  # pragma: no cover - reject() raises

    def apply(self, op: Operation) -> Step:
        """Apply one operation and judge the selected invariants on the step it made."""
        counters = self.config.counters
        counters.steps += 1
        try:
            step = self.session.apply(op)
            violations = check_step(step, self.session.trace, self.config.invariant_ids)
        except ImplementationFailed as failed:
            self.end_example(failed)
        if violations:
            counters.first_failure.setdefault(violations[0].invariant, counters.examples)
            raise violation_type(violations[0].invariant)(violations, self.session.trace.operations)
        return step

    # -- what the subject shows ----------------------------------------------------------

    def parked(self, execution: str) -> dict[str, Any] | None:
        try:
            state = self.session.read_state(execution)
        except ImplementationFailed as failed:
            self.end_example(failed)
        parked = state.get("suspendedOn") if state.get("status") == "suspended" else None
        return parked if isinstance(parked, dict) and isinstance(parked.get("on"), str) else None

    def parked_gate(self, execution: str) -> str | None:
        parked = self.parked(execution)
        return parked["on"] if parked else None

    def log_of(self, execution: str) -> list[dict[str, Any]]:
        try:
            return self.session.read_log(execution)
        except ImplementationFailed as failed:
            self.end_example(failed)

    def park_seq(self, execution: str) -> int:
        return newest_park(self.log_of(execution)) or 1

    def last_crashed(self, execution: str) -> bool:
        mine = [step for step in self.session.trace.steps if step.execution == execution]
        return bool(mine) and mine[-1].outcome.crashed

    def crashed(self) -> list[str]:
        """Executions whose worker died and that nothing has re-driven since."""
        return [x for x in self.session.executions() if self.last_crashed(x)]

    # -- flows and executions ------------------------------------------------------------
    # `define` and `a_multi_gate_execution` draw programs for the subject's features, so
    # gate_machine.py declares them as rules, on the class configured for a run.

    def define(self, program: dict[str, Any]) -> Any:
        flow_id = f"f{self.flow_count}"
        self.flow_count += 1
        step = self.apply(Define(flow_id, program))
        return flow_id if step.outcome.ok else multiple()

    def a_multi_gate_execution(self, program: dict[str, Any], input: Any) -> Any:
        """Every example has at least one execution with two or more gates to drive."""
        flow = self.define(program)
        return self.start(flow, input) if isinstance(flow, str) else multiple()

    @rule(target=executions, flow=flows, input=s.inputs)
    def start(self, flow: str, input: Any) -> Any:
        execution = f"x{self.execution_count}"
        self.execution_count += 1
        step = self.apply(Start(execution, flow, input))
        return execution if step.outcome.ok else multiple()

    def inputs_first(self, body: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A purpose-built flow records the input each run is handed (ADR 0056 D2) too."""
        return ([{"op": "input"}] if "state-migration" in self.features else []) + body

    def purpose_built(self, body: list[dict[str, Any]]) -> Any:
        """An execution of a flow written for one situation, started on v1's input contract."""
        flow = self.define({"body": self.inputs_first(body)})
        return self.start(flow, s.LEGACY_INPUT) if isinstance(flow, str) else multiple()
