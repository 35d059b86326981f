"""Predicates keyed by invariant id. A predicate looks at the newest step of a
trace (and may look back at the trace) and yields Violations, each a short
explanation that cites events by sequence number. Every predicate module registers
here; properties/checks.py imports them all and checks a step."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from loomcheck.contract.session import Step, Trace


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
