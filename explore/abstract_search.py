"""Every history of the abstract gate model (properties/abstract.py) up to a depth, breadth
first, states deduplicated; a violating state's shortest trace is kept. With a finite
alphabet and crash budget the model is finite, so a search that ends before its bound
has covered histories of every length.

    python -m loomcheck.explore.abstract_search --gates 3 --depth 12
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from loomcheck.properties.abstract import (
    Action,
    Flow,
    State,
    Transition,
    alphabet,
    describe,
    enabled_crash,
    initial,
    shapes,
    step,
    violations,
)


@dataclass(frozen=True)
class Found:
    flow: str
    invariant: str
    message: str
    trace: tuple[str, ...]


@dataclass
class Stats:
    explored: int = 0          # transitions taken (successor states generated, duplicates included)
    distinct: int = 0          # distinct states over all flows
    depth: int = 0             # the depth bound every flow completed (each history at most this long checked)
    diameter: int = 0          # the deepest level at which a new state appeared
    exhausted: bool = True     # every flow's reachable state space ended before the bound
    histories: int = 0         # action sequences of length 1..depth checked (refusals included), summed over flows
    seconds: float = 0.0
    flows: int = 0
    statuses: set[str] = field(default_factory=set)   # every status some state reached (a check that is not vacuous)
    violations: list[Found] = field(default_factory=list)


def explore_flow(flow: Flow, depth: int, answers: int = 2, crash_budget: int = 1,
                 transition: Transition = step, stats: Stats | None = None) -> Stats:
    """Breadth first over every action sequence of length <= depth, states deduplicated.
    A violating state is not expanded; its shortest trace is kept (one per invariant)."""
    stats = stats or Stats()
    letters = alphabet(flow, answers)
    start = initial(flow)
    parents: dict[State, tuple[State, Action] | None] = {start: None}
    edges: dict[State, list[State]] = {}
    frontier: list[State] = [start]
    level = 0
    reported: set[str] = set()
    while frontier and level < depth:
        level += 1
        nxt: list[State] = []
        for state in frontier:
            successors = edges[state] = []
            for action in letters:
                if not enabled_crash(flow, state, action, crash_budget):
                    continue
                moved = transition(flow, state, action)
                if moved is None:
                    continue
                stats.explored += 1
                after = moved[1]
                successors.append(after)
                if after in parents:
                    continue
                parents[after] = (state, action)
                stats.statuses.add(after.status)
                stats.diameter = max(stats.diameter, level)
                broken = violations(flow, after)
                for invariant, message in broken:
                    if invariant not in reported:
                        reported.add(invariant)
                        stats.violations.append(Found(flow.describe(), invariant, message, trace_of(parents, after)))
                if not broken:
                    nxt.append(after)
        frontier = nxt
    stats.distinct += len(parents)
    stats.histories += histories(start, edges, depth)
    stats.depth = min(stats.depth, depth if not frontier else level) if stats.flows else (depth if not frontier else level)
    stats.exhausted = stats.exhausted and not frontier
    stats.flows += 1
    return stats


def histories(start: State, edges: dict[State, list[State]], depth: int) -> int:
    """How many action sequences of length 1..depth the explored graph stands for:
    paths from the start, a refusal (a self-loop) counted like any other letter."""
    total, counts = 0, {start: 1}
    for _ in range(depth):
        following: dict[State, int] = {}
        for state, count in counts.items():
            for after in edges.get(state, ()):
                following[after] = following.get(after, 0) + count
        total += sum(following.values())
        counts = following
    return total


def trace_of(parents: dict[State, tuple[State, Action] | None], state: State) -> tuple[str, ...]:
    actions: list[str] = []
    link = parents[state]
    while link is not None:
        actions.append(describe(link[1]))
        link = parents[link[0]]
    return tuple(reversed(actions))


def explore_abstract(max_gates: int, depth: int, answers: int = 2, crash_budget: int = 1,
                     transition: Transition = step, flows: Sequence[Flow] | None = None) -> Stats:
    """Every shape with 1..max_gates gates (or the flows given), every history up to
    `depth`. `depth` in the result is the level completed for every flow; `exhausted`
    says the reachable state space ended before the bound, so every history of ANY
    length was checked (the model is finite for a finite alphabet and crash budget)."""
    began = time.perf_counter()
    stats = Stats()
    for flow in flows if flows is not None else [f for g in range(1, max_gates + 1) for f in shapes(g)]:
        explore_flow(flow, depth, answers, crash_budget, transition, stats)
    stats.seconds = time.perf_counter() - began
    return stats


def report(stats: Stats, max_gates: int, depth: int) -> Iterator[str]:
    yield (f"abstract model, 1..{max_gates} gate(s), {stats.flows} flow shape(s): depth {stats.depth} of {depth} "
           f"completed, {stats.explored} states explored, {stats.distinct} distinct, every state within "
           f"{stats.diameter} step(s){' (state space exhausted: histories of every length covered)' if stats.exhausted else ''}, "
           f"{stats.histories:.3e} histories of length 1..{depth}, {stats.seconds:.2f} s, "
           f"{len(stats.violations)} violation(s)")
    for found in stats.violations:
        yield f"  {found.invariant} on [{found.flow}]: {found.message}"
        yield f"    trace: {' ; '.join(found.trace)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Every history of the abstract gate model up to a depth.")
    parser.add_argument("--gates", type=int, default=3)
    parser.add_argument("--depth", type=int, default=12)
    parser.add_argument("--answers", type=int, default=2)
    parser.add_argument("--crash-budget", type=int, default=1)
    args = parser.parse_args(argv)
    stats = explore_abstract(args.gates, args.depth, args.answers, args.crash_budget)
    for line in report(stats, args.gates, args.depth):
        print(line)
    return 1 if stats.violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
