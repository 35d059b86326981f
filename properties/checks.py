"""Every predicate of the catalogue, and checking one step against the invariants selected.
The predicate modules are listed here, once: importing one registers its predicates."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from loomcheck.contract.script import Load
from loomcheck.contract.session import Step, Trace
from loomcheck.properties import (answers, approvals, crashes, emits, folding, gates, human, indoubt, inputs,  # noqa: F401
                                  key_safety, logs, migration, refinement, refusals, timers, typed)
from loomcheck.properties.registry import ON_LOAD, PREDICATES, Predicate, Violation


def all_predicates() -> dict[str, Predicate]:
    return PREDICATES


def check_step(step: Step, trace: Trace, invariant_ids: Iterable[str]) -> list[Violation]:
    imported = isinstance(step.op, Load)  # events another kernel wrote: replayed as written (ADR 0104 D2)
    found: list[Violation] = []
    for invariant_id in invariant_ids:
        fn = PREDICATES.get(invariant_id)
        if fn is not None and (not imported or invariant_id in ON_LOAD):
            found.extend(v if v.execution or step.execution is None else replace(v, execution=step.execution)
                         for v in fn(step, trace))
    return found
