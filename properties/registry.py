"""Predicates keyed by invariant id. A predicate looks at the newest step of a
trace (and may look back at the trace) and yields Violations, each a short
explanation that cites events by sequence number."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

from loomcheck.harness.session import Step, Trace


@dataclass(frozen=True)
class Violation:
    """What a checker found, in its own words (`message` cites events by sequence
    number), and the material its explanation is built from (properties/explain.py)."""

    invariant: str
    message: str
    events: tuple[int, ...] = field(default=())  # the seq numbers that prove it
    roles: tuple[str, ...] = field(default=())   # what each of `events` is to the argument, in the same order
    expected: str | None = None                  # what the decision says should have happened instead
    execution: str | None = None                 # whose log `events` are in (check_step fills in the step's)


Predicate = Callable[[Step, Trace], Iterable[Violation]]
PREDICATES: dict[str, Predicate] = {}
ON_LOAD: set[str] = set()  # predicates that also judge an imported log (the fold's); the rest judge what a kernel wrote

_MODULES = ("gates", "refusals", "folding", "logs", "inputs", "keysafety", "answers", "indoubt", "human", "emits", "typed",
            "approvals", "migration", "crashes")


def predicate(invariant_id: str, on_load: bool = False) -> Callable[[Predicate], Predicate]:
    def register(fn: Predicate) -> Predicate:
        if invariant_id in PREDICATES:
            raise ValueError(f"two predicates for {invariant_id}")
        PREDICATES[invariant_id] = fn
        if on_load:
            ON_LOAD.add(invariant_id)
        fn.invariant_id = invariant_id  # type: ignore[attr-defined]
        return fn
    return register


_imported = False


def all_predicates() -> dict[str, Predicate]:
    global _imported
    if not _imported:  # once: check_step asks on every step, and importlib's lookups add up
        for name in _MODULES:
            importlib.import_module(f"loomcheck.properties.{name}")
        importlib.import_module("loomcheck.explore.refinement")  # the abstract gate model's refinement (explore/)
        _imported = True
    return PREDICATES


def check_step(step: Step, trace: Trace, invariant_ids: Iterable[str]) -> list[Violation]:
    from loomcheck.harness.script import Load

    predicates = all_predicates()
    imported = isinstance(step.op, Load)  # events another kernel wrote: replayed as written (ADR 0104 D2)
    found: list[Violation] = []
    for invariant_id in invariant_ids:
        fn = predicates.get(invariant_id)
        if fn is not None and (not imported or invariant_id in ON_LOAD):
            found.extend(v if v.execution or step.execution is None else replace(v, execution=step.execution)
                         for v in fn(step, trace))
    return found
