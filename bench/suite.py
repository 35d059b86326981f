"""What a whole `loomcheck run` costs (stdio against in process, per operation and for the
CI profile end to end), and how fast its two engines go: the bounded explorer and the
state machine (docs/bench.md#suite)."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from loomcheck.bench.common import Figure, failed, guarded, per_second, ratio, show
from loomcheck.protocol.client import StdioDriver
from loomcheck.explore.alphabet import scenarios
from loomcheck.explore.explorer import explore
from loomcheck.run.coverage import Coverage
from loomcheck.contract.driver import Driver
from loomcheck.run.loading import resolve_factory
from loomcheck.run.applicability import not_applicable_because
from loomcheck.contract.session import Session, hello_of
from loomcheck.machine.state_machine import PROFILES, run_stateful
from loomcheck.properties.checks import all_predicates
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.catalogue import load_catalogue

CPUS = 2                   # the issue's target is "on 2 cores"
SUITE_LIMIT = 120.0        # seconds, per whole CI profile
STDIO_LIMIT = 3.0          # stdio / in process, per operation
SUITE_TIMEOUT = 600.0      # a hung run is a failed figure, not a hung benchmark
# Served with synchronous=NORMAL, as the main job in CI serves it (tests/test_cli.py), and as the
# in-process reference's private store is: the figures compare transports, not fsyncs (docs/stores.md).
SERVE = [sys.executable, "-m", "loomcheck", "serve"]
STDIO_IMPL = "stdio:" + shlex.join([*SERVE, "--impl", "reference:sqlite:normal"])
STORES = (("reference:memory", "memory"), ("reference:sqlite:normal", "sqlite"))


# -- item 4: per operation -------------------------------------------------------------
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
    return StdioDriver(shlex.join([*SERVE, "--impl", store]))


def per_operation_figures(quick: bool) -> list[Figure]:
    """Each transport's best round; the pair is run in alternation a few times (a
    new child process each time) so a burst of load hits both alike."""
    gates, rounds, turns = (10, 3, 3) if quick else (20, 3, 3)
    figures = []
    for store, kind in STORES:
        def pair(store: str = store, kind: str = kind) -> list[Figure]:
            local = remote = float("inf")
            for _ in range(turns):
                local = min(local, per_operation(lambda: ReferenceDriver(store=kind), gates, rounds))
                remote = min(remote, per_operation(lambda: served(store), gates, rounds))
            return [Figure(
                "suite", f"stdio / in process per operation ({kind})", ratio(remote / local), f"<= {STDIO_LIMIT:.2f}x",
                remote / local <= STDIO_LIMIT,
                f"in process {local * 1e3:.3f} ms/op, over stdio {remote * 1e3:.3f} ms/op "
                f"(best of {turns * rounds} rounds of a {gates}-gate flow: resume, read-log, read-state per gate)")]
        figures += guarded("suite", f"stdio / in process per operation ({kind})", pair)
    return figures


# -- item 4: the whole CI profile ------------------------------------------------------
@dataclasses.dataclass
class SuiteRun:
    impl: str
    label: str
    seconds: float = 0.0
    report: dict | None = None
    problem: str | None = None  # why the run counts as failed


def pin() -> None:
    """In the child before exec: at most CPUS of the CPUs this process may use; its own
    children (a served kernel, the sigkill corpus's relaunches) inherit the mask."""
    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, set(allowed[:CPUS]))


def pinned_cpus() -> str:
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0
    return f"{min(CPUS, allowed)} of {allowed}" if hasattr(os, "sched_setaffinity") else f"not pinned, {allowed}"


def run_suite(impl: str, label: str) -> SuiteRun:
    """`loomcheck run --impl IMPL` (profile ci) as a subprocess, wall time, and its report."""
    result = SuiteRun(impl, label)
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as out:
        command = [sys.executable, "-m", "loomcheck", "run", "--impl", impl, "--report", out]
        began = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=SUITE_TIMEOUT,
                                  preexec_fn=pin if hasattr(os, "sched_setaffinity") else None)
        except subprocess.TimeoutExpired:
            result.problem = f"no end after {SUITE_TIMEOUT:.0f} s"
            return result
        result.seconds = time.perf_counter() - began
        if done.returncode != 0:
            meaning = {1: "a check failed", 2: "a suite error or an incomplete run"}.get(done.returncode, "")
            tail = (done.stdout + done.stderr)[-600:].strip().replace("\n", " | ")
            result.problem = f"exit {done.returncode} ({meaning}): ... {tail}"
        report = Path(out) / "report.json"
        if report.exists():
            result.report = json.loads(report.read_text(encoding="utf-8"))
    return result


def suite_figures(runs: list[SuiteRun]) -> list[Figure]:
    figures = []
    for run in runs:
        name = f"CI profile wall, {run.label} ({CPUS} CPUs)"
        if run.problem is not None:
            figures.append(Figure("suite", name, "failed", f"<= {SUITE_LIMIT:.0f} s", False, run.problem))
            continue
        steps = (run.report or {}).get("stateMachineSteps", "?")
        figures.append(Figure("suite", name, f"{run.seconds:.1f} s", f"<= {SUITE_LIMIT:.0f} s",
                              run.seconds <= SUITE_LIMIT,
                              f"--impl {run.impl}; pinned to {pinned_cpus()} CPUs; report's wallSeconds "
                              f"{(run.report or {}).get('wallSeconds', '?')}, {steps} state-machine steps"))
    local, remote = runs
    if local.problem is None and remote.problem is None:
        figures.append(Figure("suite", "CI profile wall, stdio / in process", ratio(remote.seconds / local.seconds),
                              detail=f"{local.seconds:.1f} s in process, {remote.seconds:.1f} s over stdio"))
    return figures


def skipped_suite_figures() -> list[Figure]:
    return [Figure("suite", f"CI profile wall, {label} ({CPUS} CPUs)", "skipped (quick)", f"<= {SUITE_LIMIT:.0f} s",
                   detail="quick skips the whole-suite runs (about 30-60 s each)")
            for label in ("in process", "over stdio")]


# -- item 5: explorer ------------------------------------------------------------------
def explorer_figures(label: str, records: list[dict], how: str) -> list[Figure]:
    """Distinct states/s and transitions/s over every scenario, from exploration records."""
    seconds = sum(r["seconds"] for r in records)
    distinct = sum(r["distinctStates"] for r in records)
    transitions = sum(r["transitions"] for r in records)
    replayed = sum(r["replayedOperations"] for r in records)
    if not records or seconds <= 0:
        return [failed("explorer", f"explorer distinct states/s, {label}", f"no exploration recorded ({how})")]
    detail = (f"{distinct} distinct states, {transitions} transitions, {replayed} replayed operations "
              f"in {seconds:.2f} s over {len(records)} scenarios ({how})")
    return [Figure("explorer", f"explorer distinct states/s, {label}", per_second(distinct, seconds), detail=detail),
            Figure("explorer", f"explorer transitions/s, {label}", per_second(transitions, seconds), detail=detail)]


def reference_session(observe_layer: str | None = None) -> tuple[Session, Driver]:
    """A session on the reference as `--impl reference` makes it (SQLite), with the
    runner's coverage observer when `observe_layer` is given."""
    driver = resolve_factory("reference")()
    features = frozenset(hello_of(driver).features)
    session = Session(driver, features)
    if observe_layer is not None:
        coverage = Coverage()
        session.observers.append(lambda step, trace: coverage.observe(step, trace, observe_layer))
    return session, driver


def checked_ids(check: str, driver: Driver) -> list[str]:
    """The invariants the runner would give a check: applicable, with a predicate."""
    hello = hello_of(driver)
    known = all_predicates()
    return [inv.id for inv in load_catalogue().invariants
            if check in inv.checks and inv.id in known and not_applicable_because(inv, hello) is None]


def explore_directly(depth: int) -> list[dict]:
    """Every scenario to `depth`, in process, as the runner's explorer phase does."""
    session, driver = reference_session("explorer")
    try:
        ids = checked_ids("explorer", driver)
        records = []
        for scenario in scenarios(session.features):
            result = explore(session, scenario, ids, depth, time.monotonic() + 60.0)
            records.append({"seconds": result.seconds, "distinctStates": result.distinct,
                            "transitions": result.transitions, "replayedOperations": result.replayed})
        return records
    finally:
        driver.close()


# -- item 5: state machine -------------------------------------------------------------
def machine_figure(quick: bool, reported_steps: int | None) -> Figure:
    budget = PROFILES["ci"]
    if quick:
        budget = dataclasses.replace(budget, max_examples=100)
    name = "state-machine steps/s, in process"
    try:
        session, driver = reference_session("stateful")
        try:
            ids = checked_ids("stateful", driver)
            began = time.perf_counter()
            result = run_stateful(session, ids, budget)
            seconds = time.perf_counter() - began
        finally:
            driver.close()
    except Exception as exc:  # noqa: BLE001
        return failed("explorer", name, f"{type(exc).__name__}: {exc}")
    if result.failures or result.errors:
        return failed("explorer", name, f"the reference failed the machine: {sorted(result.failures)} {result.errors[:1]}")
    same = "" if reported_steps is None else f"; the in-process suite's report counts {reported_steps}"
    return Figure("explorer", name, per_second(result.steps, seconds),
                  detail=f"{result.steps} steps, {budget.max_examples} examples of up to {budget.steps} steps, "
                         f"in {seconds:.1f} s (the phase alone, reference on SQLite){same}")


# -- the sections ----------------------------------------------------------------------
def measure(quick: bool) -> list[Figure]:
    figures = per_operation_figures(quick)
    if quick:
        figures += skipped_suite_figures()
        depth = 5
        figures += guarded("explorer", "explorer distinct states/s, in process",
                           lambda: explorer_figures("in process", explore_directly(depth),
                                                    f"measured directly, depth {depth}, reference on SQLite"))
        figures.append(machine_figure(quick, None))
        return figures
    runs = [run_suite("reference", "in process"), run_suite(STDIO_IMPL, "over stdio")]
    figures += suite_figures(runs)
    for run in runs:
        how = f"the CI profile's report, depth {PROFILES['ci'].explore_depth}"
        figures += explorer_figures(run.label, (run.report or {}).get("exploration", []), how)
    figures.append(machine_figure(quick, (runs[0].report or {}).get("stateMachineSteps")))
    return figures


def main(argv: list[str]) -> None:
    show(measure(quick="--quick" in argv))


if __name__ == "__main__":
    main(sys.argv[1:])
