"""Fold throughput: a large JSONL log parsed by orjson and folded by the reference, against
the same lines parsed alone, in alternating rounds (docs/bench.md#fold)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable, Iterator

import orjson

from loomcheck.bench.common import Figure, best_alternating, failed, ratio, show
from loomcheck.bench.fixtures import jsonl_log
from loomcheck.reference.events import Event, loads
from loomcheck.reference.fold import State, fold

TARGET = 0.5


def parse_alone(path: Path) -> int:
    count = 0
    with path.open("rb") as lines:
        for line in lines:
            orjson.loads(line)
            count += 1
    return count


def events_of(path: Path, parse: Callable[[bytes], object]) -> Iterator[Event]:
    with path.open("rb") as lines:
        for line in lines:
            record = parse(line)
            yield Event("x", record["seq"], record["type"], record["payload"])  # type: ignore[index]


def parse_and_fold(path: Path, parse: Callable[[bytes], object] = orjson.loads) -> State:
    return fold(events_of(path, parse))


def compare(path: Path, count: int, rounds: int) -> tuple[float, float, float, float] | str:
    """Seconds for parse alone, parse + fold, the reference's reader + fold and the stdlib parse
    alone; or why the fold is wrong."""
    parse, folded, exact, stdlib = best_alternating([
        lambda: parse_alone(path),
        lambda: parse_and_fold(path),
        lambda: parse_and_fold(path, loads),
        lambda: sum(1 for _ in events_of(path, json.loads)),
    ], rounds, collector=True)  # the collector stays on, as in a kernel
    state = parse_and_fold(path)
    if state.sequence != count or state.status != "completed":
        return f"the fold ended at seq {state.sequence} ({state.status}), expected {count} (completed)"
    return parse, folded, exact, stdlib


def measure(quick: bool) -> list[Figure]:
    count = 200_000 if quick else 1_000_000
    rounds = 2 if quick else 3
    path, lean = jsonl_log(count), jsonl_log(count, lean=True)
    rich, bare = compare(path, count, rounds), compare(lean, count, rounds)
    if isinstance(rich, str) or isinstance(bare, str):
        return [failed("fold", "parse + fold vs parse alone", str(rich if isinstance(rich, str) else bare))]
    parse, folded, exact, stdlib = rich
    lean_parse, lean_folded, _, _ = bare
    size = f"{count:,} events, {path.stat().st_size / count:,.0f} bytes per line"
    return [
        Figure("fold", "parse + fold vs orjson parse alone (throughput)", ratio(parse / folded),
               f">= {TARGET:.2f}x", parse / folded >= TARGET,
               f"{size}: parse alone {count / parse:,.0f} ev/s, parse + fold {count / folded:,.0f} ev/s"),
        Figure("fold", "the same, lean mix (step outputs without text)", ratio(lean_parse / lean_folded),
               detail=f"{lean.stat().st_size / count:,.0f} bytes per line: parse alone {count / lean_parse:,.0f} "
                      f"ev/s, parse + fold {count / lean_folded:,.0f} ev/s"),
        Figure("fold", "the reference's exact reader + fold vs orjson parse alone", ratio(parse / exact),
               detail=f"parse + fold {count / exact:,.0f} ev/s; the stdlib's json.loads alone {count / stdlib:,.0f} ev/s"),
    ]


if __name__ == "__main__":
    show(measure("--quick" in sys.argv))
