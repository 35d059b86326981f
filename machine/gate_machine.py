"""The Hypothesis state machine, composed from the rules of each ADR, and the class one
run makes of it: configured with the subject's session, the invariants it judges and the
counters it reports to.

It defines generated multi-gate flows, starts executions, and resumes them with the right
gate, a wrong gate, a kernel event type, a hostile name, and while not parked; recovers
them at the wrong moment. After every operation it evaluates the selected invariants'
predicates on the newest step; everything goes through the driver interface."""

from __future__ import annotations

from typing import Any, Iterable

from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from loomcheck.contract.session import Session
from loomcheck.machine import strategies as s
from loomcheck.machine.kernel_rules import Counters, MachineConfig, supports
from loomcheck.machine.migration_rules import MigrationRules
from loomcheck.machine.recovery_rules import RecoveryRules


class GateMachine(RecoveryRules, MigrationRules):
    """Every rule but the three whose programs follow the subject's features (machine_for)."""


def machine_for(session: Session, invariant_ids: Iterable[str], counters: Counters) -> type[GateMachine]:
    """GateMachine configured for one run. Hypothesis reads a rule's strategies from its class,
    so the rules that draw programs for the subject's features are declared here, where they
    are known; their bodies are the base class's."""
    config = MachineConfig(session, tuple(invariant_ids), counters)
    programs = s.programs(features=config.features)
    executions, flows = GateMachine.executions, GateMachine.flows

    class ConfiguredMachine(GateMachine):
        @initialize(target=executions, program=s.programs(min_gates=2, features=config.features, rich=True),
                    input=s.inputs)
        def a_multi_gate_execution(self, program: dict[str, Any], input: Any) -> Any:
            return super().a_multi_gate_execution(program, input)

        @rule(target=flows, program=programs)
        def define(self, program: dict[str, Any]) -> Any:
            return super().define(program)

        @rule(execution=executions, program=programs, evolve=st.booleans(), plain_first=st.booleans(),
              transform=st.none() | s.transforms, again=st.none() | s.transforms | s.transforms, payload=s.answers,
              then=st.booleans())
        @supports("code-versions")
        def deploy_a_new_version(self, execution: str, program: dict[str, Any], evolve: bool, plain_first: bool,
                                 transform: dict[str, Any] | None, again: dict[str, Any] | None, payload: Any,
                                 then: bool) -> None:
            super().deploy_a_new_version(execution, program, evolve, plain_first, transform, again, payload, then)

    ConfiguredMachine.config = config
    return ConfiguredMachine
