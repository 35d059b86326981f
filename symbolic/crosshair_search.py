"""A bounded CrossHair behaviour-difference search that stops at the first difference.

`crosshair diffbehavior` always spends its whole budget and then reports every
difference it kept; a CI check needs only the first one, and the time it took.
This is the same search (CrossHair's `explore_paths` over the first function's
signature, both functions run on one set of symbolic arguments and compared with
CrossHair's `flexible_equal`, exceptions compared by type and message), stopped
as soon as the two differ.

Run in a fresh process (`python -m loomcheck.symbolic.crosshair_search F1 F2
CPU_SECONDS MAX_ITERATIONS`), as CrossHair's CLI runs: its tracing and patches never touch the
caller's interpreter, and the caller can bound the wall time by killing it. The
result is one JSON line on stdout.
"""

from __future__ import annotations

import copy
import inspect
import json
import sys
import time
from collections import Counter
from typing import Any, Callable


def _load(qualname: str) -> tuple[Callable[..., Any], inspect.Signature]:
    """The function and its signature with the annotations resolved (string annotations included)."""
    from crosshair.fnutil import load_by_qualname

    loaded = load_by_qualname(qualname)
    return loaded.callable()  # type: ignore[union-attr,return-value]


def search(name1: str, name2: str, budget_seconds: float, max_iterations: int) -> dict[str, Any]:
    """{"status": "no-difference-found" | "exhausted" | "difference-found" | "error",
    "seconds", "iterations", and for a difference "args", "result1", "result2"}.
    "exhausted" means CrossHair explored every path of the bounded input space:
    no difference exists there (a proof for that bound, not a sample)."""
    import crosshair.core_and_libs  # noqa: F401  (unused name) registers CrossHair's symbolic builtins and opcode patches
    from crosshair.auditwall import engage_auditwall
    from crosshair.behavior_compare import flexible_equal
    from crosshair.core import deep_realize, explore_paths
    from crosshair.diff_behavior import describe_behavior
    from crosshair.options import DEFAULT_OPTIONS, AnalysisOptionSet
    from crosshair.pure_importer import prefer_pure_python_imports
    from crosshair.statespace import RootNode
    from crosshair.util import IgnoreAttempt

    with prefer_pure_python_imports():  # as the CLI does: pure-Python json, decimal, ... that CrossHair can trace
        # The pair shares one signature; the arguments are generated from the first's.
        (function1, signature), (function2, _) = _load(name1), _load(name2)
    engage_auditwall(())  # as the CLI does: no file, network or process side effects during the search
    # At most `max_iterations` paths, which makes the outcome the same on a fast and
    # a slow machine (the search is deterministic), and at most `budget_seconds` of
    # CPU whatever happens; one path may use a third of it (CrossHair's default, the
    # square root, starves a slow first path).
    options = DEFAULT_OPTIONS.overlay(AnalysisOptionSet(per_condition_timeout=budget_seconds,
                                                        per_path_timeout=max(1.0, budget_seconds / 3),
                                                        max_iterations=max_iterations))
    options.stats = Counter()
    started = time.process_time()
    found: dict[str, Any] = {}

    def run_both(args: inspect.BoundArguments) -> tuple[Any, Any, Any, Any]:
        args2 = copy.deepcopy(args)
        return1, exc1 = describe_behavior(function1, args)
        return2, exc2 = describe_behavior(function2, args2)
        return return1, exc1, return2, exc2

    def on_path_complete(space: Any, pre_args: inspect.BoundArguments, args: inspect.BoundArguments,
                         run: Any, exc: Any, exc_stack: Any) -> bool:
        if run is None:
            return False
        return1, exc1, return2, exc2 = run
        if isinstance(exc1, IgnoreAttempt) or isinstance(exc2, IgnoreAttempt):
            return False  # CrossHair gave up on this path in one function: no verdict either way
        same_exc = (exc1 is None and exc2 is None) or (
            exc1 is not None and exc2 is not None and type(exc1) is type(exc2) and str(exc1) == str(exc2))
        if flexible_equal(return1, return2) and same_exc:
            space.detach_path()
            return False
        space.detach_path()
        found.update(args={k: repr(deep_realize(v)) for k, v in pre_args.arguments.items()},
                     result1=repr(deep_realize(exc1 if exc1 is not None else return1)),
                     result2=repr(deep_realize(exc2 if exc2 is not None else return2)))
        return True  # breakout: the first difference is the answer

    nondeterministic: list[bool] = []
    explore_paths(run_both, signature, options, RootNode(), on_path_complete,
                  on_nondeterminism=lambda: nondeterministic.append(True))
    seconds = round(time.process_time() - started, 2)
    iterations = int(options.stats["num_paths"])
    if found:
        return {"status": "difference-found", "seconds": seconds, "iterations": iterations, **found}
    if nondeterministic:
        return {"status": "error", "seconds": seconds, "iterations": iterations,
                "detail": "a path ran differently when repeated (nondeterministic code)"}
    exhausted = options.stats["exhaustion"] > 0
    return {"status": "exhausted" if exhausted else "no-difference-found", "seconds": seconds,
            "iterations": iterations}


if __name__ == "__main__":
    first, second, budget, iterations = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    try:
        outcome = search(first, second, budget, iterations)
    except BaseException as error:  # CrossHairInternal is not an Exception; any failure is an "error" result
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        detail = f"{type(error).__name__}: {error}"
        outcome = {"status": "error", "seconds": None, "iterations": None, "detail": detail}
    sys.stdout.write(json.dumps(outcome) + "\n")
