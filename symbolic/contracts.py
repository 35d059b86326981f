"""CrossHair behaviour-difference checks on the kernel's pure functions: each pairs two
functions of one signature (symbolic/log_pairs.py, symbolic/canonical_reading.py) and
backs catalogue entries; each search runs bounded, in a process of its own
(docs/model-checking.md#crosshair)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

# The budget of one search: at most this many paths (deterministic: the same outcome
# on any machine) and at most this much CPU whatever happens. 200 paths take 6-9 s
# of CPU here; each kept check's seeded mutant is found within 135 paths (6 s).
CROSSHAIR_MAX_ITERATIONS = 200
CROSSHAIR_BUDGET_SECONDS = 20.0
_LOGS = "loomcheck.symbolic.log_pairs"
_CANONICAL = "loomcheck.symbolic.canonical_reading"


@dataclass(frozen=True)
class Check:
    name: str
    first: str          # fully qualified names, as `crosshair diffbehavior` takes them
    second: str
    backs: tuple[str, ...]   # the catalogue entries the check backs


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str                   # no-difference-found | exhausted | difference-found | error
    seconds: float | None         # CPU seconds of the search (process start and imports excluded)
    wall_seconds: float           # the whole process, as CI sees it
    iterations: int | None        # paths CrossHair explored
    counterexample: dict[str, str] | None = None   # args, result1, result2 (reprs) when a difference is found
    detail: str = ""


CHECKS: tuple[Check, ...] = (
    Check("scanner-cut", f"{_LOGS}.scan_whole", f"{_LOGS}.scan_in_two", ("scan.incremental-equals-full",)),
    Check("oracle", f"{_LOGS}.reference_reading", f"{_LOGS}.oracle_reading",
          ("legacy.classified", "legacy.human-park-proves-nothing", "legacy.ambiguous-refused",
           "fold.resume-payloads-ordered", "fold.null-resume-status-only")),
    Check("fold-snapshot", f"{_LOGS}.fold_whole", f"{_LOGS}.fold_from_snapshot", ("fold.state-is-fold-of-log",)),
    Check("canonical", f"{_CANONICAL}.canonical_reference", f"{_CANONICAL}.canonical_spec",
          ("approvals.digest-bytes",)),   # the text the digest hashes; depth <= 2 here, so not digest-depth
)


def run_check(check: Check, budget_seconds: float = CROSSHAIR_BUDGET_SECONDS,
              max_iterations: int = CROSSHAIR_MAX_ITERATIONS) -> CheckResult:
    """One behaviour-difference search in a fresh process (symbolic/crosshair_search.py).
    CrossHair bounds the CPU time; a wall-clock timeout kills a process that hangs
    (a loaded CI machine runs it several times slower than the CPU budget)."""
    started = time.monotonic()
    command = [sys.executable, "-m", "loomcheck.symbolic.crosshair_search", check.first, check.second,
               str(budget_seconds), str(max_iterations)]
    try:
        # A fixed hash seed fixes set and dict-of-set orders, so the search takes
        # the same paths in every run: the same outcome, the same counterexample.
        done = subprocess.run(command, capture_output=True, text=True, timeout=6 * budget_seconds + 60,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
    except subprocess.TimeoutExpired:
        return CheckResult(check.name, "error", None, round(time.monotonic() - started, 1), None,
                           detail="wall-clock timeout: the search process was killed")
    wall = round(time.monotonic() - started, 1)
    lines = done.stdout.strip().splitlines()
    try:
        outcome = json.loads(lines[-1])
    except (IndexError, ValueError):
        return CheckResult(check.name, "error", None, wall, None,
                           detail=f"exit {done.returncode}: {(done.stderr or done.stdout)[-2000:]}")
    counterexample = ({key: outcome[key] for key in ("args", "result1", "result2")}
                      if outcome["status"] == "difference-found" else None)
    return CheckResult(check.name, outcome["status"], outcome.get("seconds"), wall, outcome.get("iterations"),
                       counterexample, outcome.get("detail", ""))


def run_crosshair_checks(budget_seconds: float = CROSSHAIR_BUDGET_SECONDS,
                         checks: tuple[Check, ...] = CHECKS,
                         max_iterations: int = CROSSHAIR_MAX_ITERATIONS) -> list[CheckResult]:
    """Every check, one after the other, each bounded by `budget_seconds` of CPU
    and `max_iterations` paths."""
    return [run_check(check, budget_seconds, max_iterations) for check in checks]


if __name__ == "__main__":
    for result in run_crosshair_checks(float(sys.argv[1]) if len(sys.argv) > 1 else CROSSHAIR_BUDGET_SECONDS):
        print(json.dumps(asdict(result)))
