"""Peak memory: folding and scanning the 1M-event log from the SQLite store, streamed a page
at a time against read whole first, each in a fresh child process (docs/bench.md#memory)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loomcheck.bench.common import Figure, mb, show
from loomcheck.bench.fixtures import sqlite_log

SCAN_TARGET = 0.10  # a streamed scan's peak, as a share of the log held in memory


def _kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def deep_size(value: object) -> int:
    """Bytes held by a JSON-like value (dicts, lists, strings, numbers), each object once."""
    seen: set[int] = set()
    stack, total = [value], 0
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set)):
            stack.extend(item)
    return total


def child(mode: str, path: str) -> dict[str, int]:
    """Run one measurement in this process; bytes above the starting point."""
    from loomcheck.reference.fold import fold
    from loomcheck.reference.runtime import Runtime
    from loomcheck.reference.stores.base import stream
    from loomcheck.reference.stores.sqlite import SqliteEventStore

    store = SqliteEventStore(path)
    runtime = Runtime(store)
    kinds = lambda step: None  # noqa: E731  every step unresolvable: the scan's most cautious reading
    start = _kb("VmRSS")
    found: dict[str, int] = {}
    if mode == "scan-streamed":
        runtime.full_scan("x", kinds)
    elif mode == "log-whole":
        store.read("x")  # the peak (VmHWM) is what holding the whole log cost
    elif mode == "fold-streamed":
        state = fold(stream(store, "x"))
        found["state"] = deep_size([state.variables, state.steps])
    elif mode == "fold-whole":
        fold(store.read("x"))  # the log is held for the whole fold
    found["peak"] = (_kb("VmHWM") - start) * 1024
    return found


def run_child(mode: str, path: Path) -> dict[str, int] | str:
    done = subprocess.run([sys.executable, "-m", "loomcheck.bench.memory", "--child", mode, str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"{mode}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:] or ''}"
    return json.loads(done.stdout)


def measure(quick: bool) -> list[Figure]:
    count = 200_000 if quick else 1_000_000
    path = sqlite_log(count, parked=True)
    results = {mode: run_child(mode, path) for mode in ("scan-streamed", "log-whole", "fold-streamed", "fold-whole")}
    failed = [r for r in results.values() if isinstance(r, str)]
    if failed:
        return [Figure("memory", "peak memory", "failed", detail="; ".join(failed))]  # type: ignore[arg-type]
    scan, log = results["scan-streamed"]["peak"], results["log-whole"]["peak"]  # type: ignore[index]
    fold_streamed, fold_whole = results["fold-streamed"], results["fold-whole"]
    return [
        Figure("memory", f"streamed scan's peak vs the log held whole ({count:,} events)", f"{scan / log:.2f}",
               f"<= {SCAN_TARGET:.2f}", scan / log <= SCAN_TARGET, f"scan {mb(scan)}, the log read whole {mb(log)}"),
        Figure("memory", "fold: streamed peak vs read whole first", f"{mb(fold_streamed['peak'])} vs "  # type: ignore[index]
               f"{mb(fold_whole['peak'])}",  # type: ignore[index]
               detail=f"the folded state itself holds {mb(fold_streamed['state'])} (every step's output)"),  # type: ignore[index]
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        show(measure("--quick" in sys.argv))
