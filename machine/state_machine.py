"""Running the state machine (gate_machine.py) over a selection of invariants: the budgets
of the profiles, the rounds that keep one failure from hiding another, and the settings
that make a derandomised run reproducible.

A violation raises an exception whose class is specific to its invariant, so
Hypothesis shrinks each invariant's failure on its own (distinct failures are
reported together) and the shrunk script is what the report keeps."""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import hypothesis
import hypothesis.errors
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import ExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.fuzz.campaign import scoped
from loomcheck.machine.findings import ImplementationFailedInRun, InvariantViolated, TransportFaultInRun
from loomcheck.machine.gate_machine import machine_for
from loomcheck.machine.kernel_rules import Counters


@dataclass(frozen=True)
class Budget:
    max_examples: int
    steps: int
    derandomize: bool
    explore_depth: int = 8          # the explorer's bound: every history of this many operations (explore/)
    explore_seconds: float = 120.0  # its time budget; what it does not finish is reported unknown, not passed


DERANDOMIZED_SEED = 20260117  # the ci profile's examples: fixed here, not by the source text of the machine
PROFILES: dict[str, Budget] = {
    "ci": Budget(max_examples=300, steps=25, derandomize=True, explore_depth=8, explore_seconds=120.0),
    "dev": Budget(max_examples=300, steps=30, derandomize=False, explore_depth=8, explore_seconds=120.0),
    "campaign": Budget(max_examples=5_000, steps=50, derandomize=False, explore_depth=14, explore_seconds=600.0),
    # For a peer whose every operation is several round trips to a server (Prefect, about 0.6 s
    # a start or resume; docs/peers.md): derandomised like ci, 10 examples of 8 steps, so a whole
    # catalogue takes a quarter of an hour rather than hours. Not a CI profile.
    "peers-slow": Budget(max_examples=10, steps=8, derandomize=True, explore_depth=4, explore_seconds=600.0),
}


@dataclass
class StatefulResult:
    examples: dict[str, int] = field(default_factory=dict)
    examples_to_failure: dict[str, int] = field(default_factory=dict)  # before shrinking: how hard it was to find
    steps: int = 0
    failures: dict[str, InvariantViolated] = field(default_factory=dict)
    errors: list[ImplementationFailedInRun | TransportFaultInRun] = field(default_factory=list)
    crashes: list[ImplementationFailedInRun] = field(default_factory=list)  # examples a driver exception ended


def run_stateful(session: Session, invariant_ids: list[str], budget: Budget, seed: int | None = None,
                 on_example: Callable[[int], None] | None = None,
                 database: ExampleDatabase | None = None) -> StatefulResult:
    """Run the machine over the given invariants; when some fail, run again
    without them, so one failure does not hide another. Every round that does not
    end the loop fails at least one more invariant, so the loop ends with every
    invariant either failed or explored for the whole budget (or with an error):
    a pass is never a truncated exploration.

    `database`: a Hypothesis example database (a campaign's, docs/campaigns.md): each round's
    failing examples are saved there, scoped to that round's invariants, and replayed first
    by the next run of the same selection."""
    result = StatefulResult()
    remaining = list(invariant_ids)
    for _ in range(len(remaining) + 1):
        if not remaining:
            break
        counters = Counters(on_example=on_example)
        machine = machine_for(session, remaining, counters)
        # A derandomised profile runs from a fixed seed: Hypothesis would otherwise derive it
        # from the machine class's source text, so any edit to this file (or a process that
        # reads that source differently) would change every example the profile draws.
        chosen = seed if seed is not None else (DERANDOMIZED_SEED if budget.derandomize else None)
        if chosen is not None:
            machine = hypothesis.seed(chosen)(machine)
        found = _run_once(machine, budget, False, scoped(database, *sorted(remaining)))
        judged = counters.examples - len(counters.crashes)  # an example a driver exception ended judged nothing
        for invariant_id in remaining:
            result.examples[invariant_id] = result.examples.get(invariant_id, 0) + judged
        result.steps += counters.steps
        result.crashes.extend(counters.crashes)
        new = [f for f in found if isinstance(f, InvariantViolated)]
        result.errors.extend(f for f in found if isinstance(f, (ImplementationFailedInRun, TransportFaultInRun)))
        for failure in new:
            invariant_id = failure.violations[0].invariant
            result.failures.setdefault(invariant_id, failure)
            if invariant_id in counters.first_failure:
                earlier_rounds = result.examples.get(invariant_id, 0) - counters.examples
                result.examples_to_failure.setdefault(invariant_id, earlier_rounds + counters.first_failure[invariant_id])
        if not new:
            break
        remaining = [i for i in remaining if i not in result.failures]
        if result.errors:
            break  # a crashing implementation would crash the next round the same way
    return result


@contextmanager
def stable_generation() -> Iterator[None]:
    """Hypothesis draws a few values from constants it mines from every *local*
    module loaded (not stdlib, not site-packages). The examples of a derandomised
    run would then change with the set of modules imported, with any edit to their
    literals, and between an editable and a wheel install: the same kernel could
    pass in one process and fail in another. For loomcheck's own runs the pool is
    pinned empty. This touches a private Hypothesis API, so it degrades to a no-op
    if that API moves (the run stays correct, only less reproducible)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without this module
        yield
        return
    original = getattr(providers, "_get_local_constants", None)
    current = getattr(providers, "_local_constants", None)
    try:
        pinned = copy.deepcopy(current)
        for pool in vars(pinned).values():
            pool.clear()
    except (TypeError, AttributeError):  # pragma: no cover - the private API moved
        pinned = None
    if original is None or pinned is None:
        yield
        return
    providers._get_local_constants = lambda: pinned
    try:
        yield
    finally:
        providers._get_local_constants = original


def _run_once(machine: type[RuleBasedStateMachine], budget: Budget, derandomize: bool,
              database: ExampleDatabase | None = None) -> list[BaseException]:
    config = settings(
        max_examples=budget.max_examples,
        stateful_step_count=budget.steps,
        derandomize=derandomize,
        database=database,  # None but in a campaign: ci's examples never depend on an earlier run
        deadline=None,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=True,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),  # reuse: the database's examples first
        print_blob=False,
    )
    try:
        with stable_generation():
            run_state_machine_as_test(machine, settings=config)
    except (InvariantViolated, ImplementationFailedInRun, TransportFaultInRun) as failure:
        return [failure]
    except hypothesis.errors.Unsatisfiable:
        return []  # every example ended in a driver exception: Counters.crashes has them
    except hypothesis.errors.Flaky as flaky:
        # The same operations gave different results when Hypothesis ran them again: the
        # implementation is nondeterministic (or keeps state across a reset). Its finding.
        failed = ImplementationFailed("state machine", f"the same script behaved differently when run again, so "
                                                       f"the implementation is nondeterministic or reset() does not "
                                                       f"forget everything ({type(flaky).__name__})", "nondeterministic")
        return [ImplementationFailedInRun(failed, [])]
    except BaseExceptionGroup as group:
        found = [e for e in _flatten(group) if isinstance(e, (InvariantViolated, ImplementationFailedInRun, TransportFaultInRun))]
        stops = [e for e in _flatten(group) if not isinstance(e, Exception) and e not in found]
        if stops:
            raise stops[0]  # the run was stopped (deadline, budget, interrupt): not a finding of this example
        return found
    return []


def _flatten(group: BaseExceptionGroup) -> Iterable[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _flatten(exc)
        else:
            yield exc
