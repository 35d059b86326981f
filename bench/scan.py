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


def main(argv: list[str]) -> None:
    gates = int(argv[0]) if argv else 200
    for store in ("memory", "sqlite"):
        full = run(FullScans, gates, store)
        warm = run(Runtime, gates, store)
        print(f"{store:6} {gates} resumes of one execution: full scans {full:.2f} s, incremental {warm:.2f} s, "
              f"ratio {full / warm:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
