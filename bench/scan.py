"""How much the incremental stray scan (ADR 0104 R1a) saves: a long-lived
execution resumed many times, scanned whole on every resume versus fed only
what is new. Prints the ratio measured in one run (machines here are shared:
the ratio, not the seconds, is the figure). Run: python -m loomcheck.bench.scan
or python bench/scan.py [gates]."""

from __future__ import annotations

import sys
import time

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class FullScans(Runtime):
    def scanned(self, execution_id, program, live, fresh):  # type: ignore[override]
        return super().scanned(execution_id, program, live, fresh=True)


def run(runtime_class: type[Runtime], gates: int, store: str) -> float:
    driver = ReferenceDriver(store=store, runtime_class=runtime_class)
    program = {"body": [op for i in range(gates) for op in ({"op": "step", "id": f"s{i}"},
                                                             {"op": "suspend", "on": f"g{i}"})] + [{"op": "complete"}]}
    assert driver.define_flow("f", program).ok and driver.start("x", "f", None).ok
    began = time.perf_counter()
    for i in range(gates):
        assert driver.resume("x", f"g{i}", i).ok
    elapsed = time.perf_counter() - began
    driver.close()
    return elapsed


def scanner_alone(cases: int = 300) -> None:
    """The scanner without a kernel around it: a verdict at every cut position of the
    fleet corpus's logs, by a full rescan each time or by feeding only the new event."""
    from loomcheck.fleet.generate import fixed_cases, generated_case
    from loomcheck.reference.events import Event
    from loomcheck.reference.legacy import kinds_of
    from loomcheck.reference.scanner import StrayScanner, scan
    from loomcheck.spec.programs import FlowProgram

    logs = []
    for case in fixed_cases() + [generated_case(3, i) for i in range(cases)]:
        events = [Event("x", e.seq, e.type, e.payload) for e in case.log]
        start = events[0].seq - 1 if events else int((case.snapshot or {}).get("sequence") or 0)
        logs.append((kinds_of(FlowProgram.model_validate(case.program)), events, case.snapshot, start))
    began, cuts = time.perf_counter(), 0
    for kinds, events, snapshot, _ in logs:
        for cut in range(len(events) + 1):
            scan(events[:cut], snapshot, kinds)
            cuts += 1
    full = time.perf_counter() - began
    began = time.perf_counter()
    for kinds, events, snapshot, start in logs:
        scanner = StrayScanner.from_snapshot(snapshot, start) if snapshot and start else StrayScanner(consumed=start)
        for cut in range(len(events) + 1):
            scanner.feed(events[cut:cut + 1], kinds)
            scanner.verdict()
    warm = time.perf_counter() - began
    print(f"scanner {cuts} cut positions of {len(logs)} fleet logs: full rescans {full:.3f} s, "
          f"incremental {warm:.3f} s, ratio {full / warm:.2f}x")


def main(argv: list[str]) -> None:
    gates = int(argv[0]) if argv else 200
    scanner_alone()
    for store in ("memory", "sqlite"):
        full = run(FullScans, gates, store)
        warm = run(Runtime, gates, store)
        print(f"{store:6} {gates} resumes of one execution: full scans {full:.2f} s, incremental {warm:.2f} s, "
              f"ratio {full / warm:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
