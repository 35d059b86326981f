"""A kernel whose parallel always records the first-called branch's park, even
when a later branch is a human step: the mixed-parallel hazard does not
reproduce on it (the demonstration reports not-reproduced, never pass)."""

from __future__ import annotations

from loomcheck.reference import interpreter
from loomcheck.reference.context import Park
from loomcheck.reference.driver import ReferenceDriver


def parallel_first(ctx, op):
    parks = []
    for branch in op.branches:
        try:
            interpreter.call(ctx, branch)
        except Park as park:
            parks.append(park)
    if parks:
        raise parks[0]
    return []


class CallOrderDriver(ReferenceDriver):
    def _refusable(self, operation):
        original = interpreter.parallel
        interpreter.parallel = parallel_first
        try:
            return super()._refusable(operation)
        finally:
            interpreter.parallel = original


def make() -> ReferenceDriver:
    return CallOrderDriver(store="memory")
