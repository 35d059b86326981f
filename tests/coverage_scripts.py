"""The scripts and drivers the coverage tests share (tests/test_coverage.py,
tests/test_reached.py): the reference or a seeded mutant (tests/mutants/) driven through a
hand-written script, with what each operation reached."""

from __future__ import annotations

import importlib
from typing import Callable

from loomcheck.contract.driver import Driver
from loomcheck.contract.script import Define, Operation, Resume, Start
from loomcheck.contract.session import Session, hello_of
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.run.coverage import Coverage
from loomcheck.run.reached import reached

GATE = {"body": [{"op": "suspend", "on": "go1"}, {"op": "complete"}]}
CRASHING = {"body": [{"op": "step", "id": "a", "crash": {"at": "before-effect"}}, {"op": "suspend", "on": "go1"},
                     {"op": "complete"}]}
WITH_HUMAN = {"body": [{"op": "suspend", "on": "go1"}, {"op": "step", "id": "h", "kind": "human"},
                       {"op": "suspend", "on": "go2"}, {"op": "complete"}]}
GATES = {"body": [{"op": "suspend", "on": "go1"}, {"op": "suspend", "on": "go2"}, {"op": "suspend", "on": "go3"},
                  {"op": "complete"}]}

WRONG_GATE = [Define("f", GATE), Start("x", "f"), Resume("x", "nope", 1), Resume("x", "go1", 1)]


def reference() -> Driver:
    return ReferenceDriver(store="memory")


def mutant(name: str) -> Callable[[], Driver]:
    return importlib.import_module(f"loomcheck.tests.mutants.{name}").make


def run(make: Callable[[], Driver], script: list[Operation], layer: str = "stateful") -> Coverage:
    driver = make()
    session = Session(driver, frozenset(hello_of(driver).features))
    coverage = Coverage()
    session.reset()
    for op in script:
        coverage.observe(session.apply(op), session.trace, layer)
    driver.close()
    return coverage


def keys(coverage: Coverage) -> set[str]:
    return set(coverage.by)


def per_step(make: Callable[[], Driver], script: list[Operation]) -> list[set[str]]:
    """What each operation of the script reached, in order."""
    driver = make()
    session = Session(driver, frozenset(hello_of(driver).features))
    session.reset()
    found = [reached(session.apply(op), session.trace) for op in script]
    driver.close()
    return found
