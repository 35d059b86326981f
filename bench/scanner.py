"""Scanner scaling (ADR 0104 amendment R1a): a resume's stray scan, warm (the cached clean
scanner fed only the new events) against cold (the whole retained log), on one execution
of 1k to 1M events in the SQLite store, and the whole resume beside it (docs/bench.md#scanner)."""

from __future__ import annotations

import statistics
import sys
import time

from loomcheck.bench.common import Figure, ratio, show
from loomcheck.bench.fixtures import copy_of, sqlite_log
from loomcheck.reference.runtime import Runtime
from loomcheck.reference.stores.sqlite import SqliteEventStore
from loomcheck.spec.programs import FlowProgram

WARM_TARGET = 2.0
LINEAR = (5.0, 20.0)   # 10x the events: between 5x and 20x the time counts as linear
RESUME = [("EXECUTION_RESUMED", {"approved": True}), ("STEP_STARTED", {"stepId": "next", "attempt": 1}),
          ("STEP_COMPLETED", {"stepId": "next", "output": {"status": 200}}),
          ("EXECUTION_SUSPENDED", {"condition": {"on": "review"}})]


def scan_times(count: int, warm_rounds: int) -> tuple[float, float, int]:
    """(median warm scan, best cold scan) in seconds, and the strays found (0 on this log)."""
    program = FlowProgram.model_validate({"body": []})
    store = SqliteEventStore(copy_of(sqlite_log(count, parked=True)))
    runtime = Runtime(store)
    try:
        colds = []
        for _ in range(2 if count >= 1_000_000 else 5):
            runtime.scans.drop("x")
            began = time.perf_counter()
            verdict = runtime.scanned("x", program, live=False, fresh=False)
            colds.append(time.perf_counter() - began)
        warms = []
        for _ in range(warm_rounds):
            store.append("x", store.next_seq("x"), RESUME)
            began = time.perf_counter()
            verdict = runtime.scanned("x", program, live=False, fresh=False)
            warms.append(time.perf_counter() - began)
        return statistics.median(warms), min(colds), len(verdict.classified)
    finally:
        store.close()


def gated_program(gates: int) -> FlowProgram:
    body = [op for i in range(gates) for op in ({"op": "step", "id": f"s{i}"}, {"op": "suspend", "on": f"g{i}"})]
    return FlowProgram.model_validate({"body": body + [{"op": "complete"}]})


def resume_time(count: int) -> float:
    """A warm whole resume (`Runtime.resume`) of an execution about `count` events long,
    parked at a gate of a flow of steps and gates. The log up to there is written directly,
    as the reference writes it, and left crashed; a recovery runs the flow to its next park."""
    answered = count // 4
    store = SqliteEventStore(":memory:")
    runtime = Runtime(store)
    runtime.register("f", gated_program(answered + 3))
    log: list[tuple[str, object]] = [("EXECUTION_STARTED", {"flowId": "f", "input": None})]
    for i in range(answered):
        log += [("STEP_STARTED", {"stepId": f"s{i}", "attempt": 1}), ("STEP_COMPLETED", {"stepId": f"s{i}", "output": None}),
                ("EXECUTION_SUSPENDED", {"condition": {"on": f"g{i}"}}), ("EXECUTION_RESUMED", {"n": i})]
    store.append("x", 1, log)
    try:
        runtime.recover("x")
        times = []
        for gate in (answered, answered + 1):  # the first resume scans cold, the second warm
            began = time.perf_counter()
            driven = runtime.resume("x", f"g{gate}", {"n": gate})
            times.append(time.perf_counter() - began)
            if driven.state.parked_on != f"g{gate + 1}":
                raise RuntimeError(f"the resume of g{gate} ended {driven.state.status}, not parked on g{gate + 1}")
        return times[-1]
    finally:
        store.close()


def measure(quick: bool) -> list[Figure]:
    sizes = [1_000, 10_000, 100_000] + ([] if quick else [1_000_000])
    rows = {}
    for count in sizes:
        rows[count] = scan_times(count, warm_rounds=50 if quick else 200)
    curve = "; ".join(f"{count:,}: warm {warm * 1e6:,.0f} us, cold {cold * 1e3:,.1f} ms "
                      f"({cold * 1e9 / count:,.0f} ns/event)" for count, (warm, cold, _) in rows.items())
    biggest, smallest = sizes[-1], sizes[0]
    warm_ratio = rows[biggest][0] / rows[smallest][0]
    step = rows[biggest][1] / rows[biggest // 10][1]
    figures = [
        Figure("scanner", f"warm scan at {biggest:,} vs at {smallest:,} events", ratio(warm_ratio),
               f"<= {WARM_TARGET:.2f}x", warm_ratio <= WARM_TARGET, curve),
        Figure("scanner", f"cold scan, {biggest // 10:,} -> {biggest:,} events (linear: ~10x)", ratio(step),
               f"{LINEAR[0]:.0f}x-{LINEAR[1]:.0f}x", LINEAR[0] <= step <= LINEAR[1]),
        Figure("scanner", f"cold / warm scan at {biggest:,} events", ratio(rows[biggest][1] / rows[biggest][0])),
    ]
    if any(strays for _, _, strays in rows.values()):
        figures.append(Figure("scanner", "strays on a clean log", "failed", detail="the scan flagged entries "
                              "on a log where every answer follows its park"))
    resumes = {count: resume_time(count) for count in ([1_000, 10_000] if quick else [1_000, 10_000, 100_000])}
    top = max(resumes)
    figures.append(Figure("scanner", f"whole resume at {top:,} vs at 1,000 events", ratio(resumes[top] / resumes[1_000]),
                          detail="; ".join(f"{c:,}: {t * 1e3:,.1f} ms" for c, t in resumes.items())
                          + " (re-fold and replay from the top: grows with the log by design)"))
    return figures


if __name__ == "__main__":
    show(measure("--quick" in sys.argv))
