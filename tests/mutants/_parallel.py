"""Shared by the parallel mutants: a reference driver whose ctx.parallel records
the park that `choose` picks among the branches that parked."""

from __future__ import annotations

from typing import Callable

from loomcheck.reference import interpreter
from loomcheck.reference.context import Park
from loomcheck.reference.driver import ReferenceDriver


def driver_recording(choose: Callable[[list[Park]], Park]) -> ReferenceDriver:
    def parallel(ctx, op):
        parks, results = [], []
        for branch in op.branches:
            try:
                results.append(interpreter.call(ctx, branch))
            except Park as park:
                parks.append(park)
        if parks:
            raise choose(parks)
        return results

    class PatchedParallel(ReferenceDriver):
        def _refusable(self, operation):
            original = interpreter.parallel
            interpreter.parallel = parallel
            try:
                return super()._refusable(operation)
            finally:
                interpreter.parallel = original

    return PatchedParallel(store="memory")
