"""What a run of the state machine finds, as exceptions: an invariant violated (one class
per invariant), a driver exception that ends its example, a transport fault that stops
the run."""

from __future__ import annotations

from loomcheck.contract.script import Operation
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.properties.registry import Violation


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


class TransportFaultInRun(BaseException):
    """The implementation's process hung, died or broke the protocol. A BaseException so
    that Hypothesis stops at once instead of shrinking: every replay would cost a
    restart (and a hang its whole timeout), and the budget of restarts is the run's."""

    def __init__(self, failure: ImplementationFailed, operations: list[Operation]) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.operations = operations


def in_run(failure: ImplementationFailed, operations: list[Operation]) -> ImplementationFailedInRun | TransportFaultInRun:
    return (TransportFaultInRun if failure.reason else ImplementationFailedInRun)(failure, operations)


_VIOLATION_TYPES: dict[str, type[InvariantViolated]] = {}


def violation_type(invariant_id: str) -> type[InvariantViolated]:
    """One exception class per invariant: Hypothesis tells failures apart by type."""
    if invariant_id not in _VIOLATION_TYPES:
        name = "Violated_" + "".join(c if c.isalnum() else "_" for c in invariant_id)
        _VIOLATION_TYPES[invariant_id] = type(name, (InvariantViolated,), {})
    return _VIOLATION_TYPES[invariant_id]
