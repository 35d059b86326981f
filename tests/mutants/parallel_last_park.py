"""ctx.parallel records the LAST branch's park instead of the first called, so
suspend points in one parallel are answered out of call order."""

from __future__ import annotations

from loomcheck.reference import interpreter
from loomcheck.reference.context import Park
from loomcheck.reference.driver import ReferenceDriver


def parallel_last(ctx, op):
    parks = []
    results = []
    for branch in op.branches:
        try:
            results.append(interpreter.call(ctx, branch))
        except Park as park:
            parks.append(park)
    if parks:
        raise parks[-1]
    return results


class LastParkDriver(ReferenceDriver):
    def _refusable(self, operation):
        original = interpreter.parallel
        interpreter.parallel = parallel_last
        try:
            return super()._refusable(operation)
        finally:
            interpreter.parallel = original


def make() -> ReferenceDriver:
    return LastParkDriver(store="memory")
