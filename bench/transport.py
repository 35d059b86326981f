"""What the stdio transport costs: the same operations against the reference
kernel in process and over the driver protocol (`loomcheck serve` in a child
process), side by side in one run. Prints the time per operation and the
ratio (these machines are shared: the ratio, not the seconds, is the figure).
Run: python bench/transport.py [gates] [--suite]

--suite also times the whole CI profile (the main job) through both transports."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from loomcheck.protocol.client import StdioDriver
from loomcheck.reference.driver import ReferenceDriver


def workload(driver: Any, gates: int) -> int:
    """A flow of `gates` steps and gates, driven to its end, reading the log and the
    state after every resume as the harness does: the operations the checks make."""
    program = {"body": [op for i in range(gates) for op in ({"op": "step", "id": f"s{i}", "output": i},
                                                             {"op": "suspend", "on": f"g{i}"}, {"op": "observe"})]
               + [{"op": "complete", "output": "done"}]}
    driver.reset()
    assert driver.define_flow("f", program).ok and driver.start("x", "f", {"n": gates}).ok
    calls = 2
    for i in range(gates):
        assert driver.resume("x", f"g{i}", {"answer": i}).ok
        driver.read_log("x")
        driver.read_state("x")
        calls += 3
    return calls


def per_operation(make: Callable[[], Any], gates: int, rounds: int) -> float:
    driver = make()
    try:
        workload(driver, 3)  # warm: imports, the first process, SQLite's first pages
        best = float("inf")
        for _ in range(rounds):
            began = time.perf_counter()
            calls = workload(driver, gates)
            best = min(best, (time.perf_counter() - began) / calls)
        return best
    finally:
        driver.close()


def served(store: str) -> StdioDriver:
    return StdioDriver(shlex.join([sys.executable, "-m", "loomcheck", "serve", "--impl", store]))


def suite(impl: str) -> float:
    with tempfile.TemporaryDirectory() as out:
        began = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "loomcheck", "run", "--impl", impl, "--report", out],
                              capture_output=True, text=True)
        elapsed = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"{impl}: exit {done.returncode}\n{done.stdout[-2000:]}")
        return elapsed


def main(argv: list[str]) -> None:
    gates = int(next((a for a in argv if a.isdigit()), "20"))
    print(f"per operation, best of 5 rounds of a {gates}-gate flow (resume, read-log, read-state per gate):")
    print(f"{'store':<10} {'in process':>12} {'over stdio':>12} {'ratio':>7}  target (issue 10): stdio at most 3x")
    for store, label in (("reference:memory", "memory"), ("reference", "sqlite")):
        kind = "memory" if store.endswith("memory") else "sqlite"
        local = per_operation(lambda: ReferenceDriver(store=kind), gates, 5)
        remote = per_operation(lambda: served(store), gates, 5)
        print(f"{label:<10} {local * 1e3:>10.3f}ms {remote * 1e3:>10.3f}ms {remote / local:>6.2f}x")
    if "--suite" in argv:
        in_process = suite("reference")
        over_stdio = suite("stdio:" + shlex.join([sys.executable, "-m", "loomcheck", "serve"]))
        print(f"the CI profile (main job, wall): in process {in_process:.1f}s, over stdio {over_stdio:.1f}s, "
              f"ratio {over_stdio / in_process:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
