"""The Hypothesis state machine: defines generated multi-gate flows, starts
executions, and resumes them with the right gate, a wrong gate, a kernel event
type, a hostile name, and while not parked; recovers them at the wrong moment.
After every operation it evaluates the selected invariants' predicates on the
newest step. Everything goes through the driver interface.

A violation raises an exception whose class is specific to its invariant, so
Hypothesis shrinks each invariant's failure on its own (distinct failures are
reported together) and the shrunk script is what the report keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, multiple, rule, run_state_machine_as_test

from loomcheck.harness.script import Define, Operation, Recover, Resume, Start
from loomcheck.harness.session import ImplementationFailed, Session
from loomcheck.properties import strategies as s
from loomcheck.properties.registry import Violation, check_step


class InvariantViolated(AssertionError):
    def __init__(self, violations: list[Violation], operations: list[Operation]) -> None:
        super().__init__(violations[0].message)
        self.violations = violations
        self.operations = operations


class ImplementationFailedInRun(Exception):
    def __init__(self, failure: ImplementationFailed, operations: list[Operation]) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.operations = operations


_VIOLATION_TYPES: dict[str, type[InvariantViolated]] = {}


def violation_type(invariant_id: str) -> type[InvariantViolated]:
    """One exception class per invariant: Hypothesis tells failures apart by type."""
    if invariant_id not in _VIOLATION_TYPES:
        name = "Violated_" + "".join(c if c.isalnum() else "_" for c in invariant_id)
        _VIOLATION_TYPES[invariant_id] = type(name, (InvariantViolated,), {})
    return _VIOLATION_TYPES[invariant_id]


@dataclass(frozen=True)
class Budget:
    max_examples: int
    steps: int
    derandomize: bool


PROFILES: dict[str, Budget] = {
    "ci": Budget(max_examples=120, steps=20, derandomize=True),
    "dev": Budget(max_examples=300, steps=30, derandomize=False),
    "campaign": Budget(max_examples=5_000, steps=50, derandomize=False),
}


@dataclass
class Counters:
    examples: int = 0
    steps: int = 0
    on_example: Callable[[int], None] | None = None


def build_machine(session: Session, invariant_ids: Iterable[str], counters: Counters) -> type[RuleBasedStateMachine]:
    ids = tuple(invariant_ids)

    class GateMachine(RuleBasedStateMachine):
        flows = Bundle("flows")
        executions = Bundle("executions")

        def __init__(self) -> None:
            super().__init__()
            counters.examples += 1
            if counters.on_example is not None:
                counters.on_example(counters.examples)
            self.flow_count = 0
            self.execution_count = 0
            try:
                session.reset()
            except ImplementationFailed as failed:
                raise ImplementationFailedInRun(failed, []) from None

        def apply(self, op: Operation):
            counters.steps += 1
            try:
                step = session.apply(op)
                violations = check_step(step, session.trace, ids)
            except ImplementationFailed as failed:
                raise ImplementationFailedInRun(failed, session.script()) from None
            if violations:
                raise violation_type(violations[0].invariant)(violations, session.trace.operations)
            return step

        @initialize(target=executions, program=s.programs(min_gates=2), input=s.inputs)
        def a_multi_gate_execution(self, program: dict[str, Any], input: Any):
            """Every example has at least one execution with two or more gates to drive."""
            flow = self.define(program)
            return self.start(flow, input) if isinstance(flow, str) else multiple()

        @rule(target=flows, program=s.programs())
        def define(self, program: dict[str, Any]):
            flow_id = f"f{self.flow_count}"
            self.flow_count += 1
            step = self.apply(Define(flow_id, program))
            return flow_id if step.outcome.ok else multiple()

        @rule(target=executions, flow=flows, input=s.inputs)
        def start(self, flow: str, input: Any):
            execution = f"x{self.execution_count}"
            self.execution_count += 1
            step = self.apply(Start(execution, flow, input))
            return execution if step.outcome.ok else multiple()

        def parked_gate(self, execution: str) -> str | None:
            try:
                state = session.read_state(execution)
            except ImplementationFailed as failed:
                raise ImplementationFailedInRun(failed, session.trace.operations) from None
            parked = state.get("suspendedOn") if state.get("status") == "suspended" else None
            return parked.get("on") if isinstance(parked, dict) and isinstance(parked.get("on"), str) else None

        @rule(execution=executions, payload=s.payloads)
        def answer_the_parked_gate(self, execution: str, payload: Any) -> None:
            self.apply(Resume(execution, self.parked_gate(execution) or "go1", payload))

        @rule(execution=executions, answers=st.lists(s.payloads, min_size=1, max_size=4))
        def answer_gates_until_done(self, execution: str, answers: list[Any]) -> None:
            """Drive an execution forward: answer whatever it parks on, then once more."""
            for payload in answers:
                gate = self.parked_gate(execution)
                self.apply(Resume(execution, gate or "go1", payload))
                if gate is None:
                    break

        @rule(execution=executions, name=s.resume_names, payload=s.payloads)
        def resume_naming_a_gate(self, execution: str, name: str, payload: Any) -> None:
            self.apply(Resume(execution, name, payload))

        @rule(execution=executions, kind=s.kernel_types, payload=s.payloads)
        def resume_with_a_kernel_type(self, execution: str, kind: str, payload: Any) -> None:
            self.apply(Resume(execution, kind, payload))

        @rule(execution=executions)
        def recover(self, execution: str) -> None:
            self.apply(Recover(execution))

    return GateMachine


@dataclass
class StatefulResult:
    examples: dict[str, int] = field(default_factory=dict)
    steps: int = 0
    failures: dict[str, InvariantViolated] = field(default_factory=dict)
    errors: list[ImplementationFailedInRun] = field(default_factory=list)


def run_stateful(session: Session, invariant_ids: list[str], budget: Budget, seed: int | None = None,
                 max_rounds: int = 4, on_example: Callable[[int], None] | None = None) -> StatefulResult:
    """Run the machine over the given invariants; when some fail, run again
    without them (up to max_rounds) so one failure does not hide another."""
    result = StatefulResult()
    remaining = list(invariant_ids)
    for _ in range(max_rounds):
        if not remaining:
            break
        counters = Counters(on_example=on_example)
        machine = build_machine(session, remaining, counters)
        if seed is not None:
            machine = hypothesis.seed(seed)(machine)
        found = _run_once(machine, budget, seed is None and budget.derandomize)
        for invariant_id in remaining:
            result.examples[invariant_id] = result.examples.get(invariant_id, 0) + counters.examples
        result.steps += counters.steps
        new = [f for f in found if isinstance(f, InvariantViolated)]
        result.errors.extend(f for f in found if isinstance(f, ImplementationFailedInRun))
        for failure in new:
            result.failures.setdefault(failure.violations[0].invariant, failure)
        if not new:
            break
        remaining = [i for i in remaining if i not in result.failures]
        if result.errors:
            break  # a crashing implementation would crash the next round the same way
    return result


def _run_once(machine: type[RuleBasedStateMachine], budget: Budget, derandomize: bool) -> list[BaseException]:
    config = settings(
        max_examples=budget.max_examples,
        stateful_step_count=budget.steps,
        derandomize=derandomize,
        database=None,
        deadline=None,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=True,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        print_blob=False,
    )
    try:
        run_state_machine_as_test(machine, settings=config)
    except (InvariantViolated, ImplementationFailedInRun) as failure:
        return [failure]
    except BaseExceptionGroup as group:
        return [e for e in _flatten(group) if isinstance(e, (InvariantViolated, ImplementationFailedInRun))]
    return []


def _flatten(group: BaseExceptionGroup) -> Iterable[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _flatten(exc)
        else:
            yield exc
