"""The bounded exhaustive explorer: every history of a scenario's letters up to a depth,
breadth first, against any implementation through the driver interface; states
deduplicated by what the implementation shows and restored by re-execution. How the
search works and what it assumes: docs/model-checking.md#the-explorer."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal

from loomcheck.explore.alphabet import Scenario
from loomcheck.contract.script import Operation
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session, Step, Trace
from loomcheck.properties.registry import Violation
from loomcheck.properties.checks import check_step

ExtraCheck = Callable[[Step, Trace], Iterable[Violation]]
Status = Literal["exhausted", "bounded", "unknown", "failed"]


@dataclass
class Failure:
    invariant: str
    message: str
    operations: list[Operation]


@dataclass
class Exploration:
    scenario: str
    depth_target: int
    depth_complete: int = 0        # every history of at most this many letters was checked
    status: Status = "unknown"     # exhausted: no new state at some depth (every length is covered);
                                   # bounded: complete to the target depth; failed: every invariant failed
    transitions: int = 0           # letters applied to a distinct state, each judged
    distinct: int = 0              # distinct states reached
    replayed: int = 0              # operations re-executed to restore states
    seconds: float = 0.0
    failures: dict[str, Failure] = field(default_factory=dict)
    errors: list[tuple[str, list[Operation]]] = field(default_factory=list)
    transport_fault: ImplementationFailed | None = None


def state_key(session: Session) -> str:
    """What the implementation shows, as one hash: every execution's log and state, and the clock.
    What the last operation's step read right after it ran is used as is (nothing has run since);
    every other execution is read again, so a kernel that changed one it was not asked to is seen."""
    parts: list[object] = [session.trace.now]
    last = session.trace.steps[-1] if session.trace.steps else None
    for execution in sorted(session.executions()):
        if last is not None and last.execution == execution:
            raw, state = last.log_after, last.state_after
        elif last is not None and last.others and execution in last.others:
            raw, state = last.others[execution][1], None
        else:
            raw, state = session.read_log(execution), None
        log = [(e["type"], e.get("payload")) for e in raw]
        if not log:
            state = None
        elif state is None:
            state = session.read_state(execution)
        parts.append((execution, log, state))
    text = json.dumps(parts, sort_keys=True, ensure_ascii=True, default=repr)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


class Explorer:
    def __init__(self, session: Session, scenario: Scenario, invariant_ids: Iterable[str],
                 extra_checks: Iterable[ExtraCheck] = ()) -> None:
        self.session = session
        self.scenario = scenario
        self.ids = tuple(invariant_ids)
        self.extra = tuple(extra_checks)
        self.current: tuple[int, ...] | None = None  # the history the kernel is in now
        self.keys: dict[tuple[int, ...], str] = {}

    def run(self, depth: int, deadline: float) -> Exploration:
        began = time.monotonic()
        result = Exploration(self.scenario.name, depth)
        try:
            self._search(depth, deadline, result)
        except ImplementationFailed as failed:
            if failed.reason is None:
                raise
            result.transport_fault = failed  # its process hung or died: the search cannot go on
        result.seconds = round(time.monotonic() - began, 3)
        return result

    def _search(self, depth: int, deadline: float, result: Exploration) -> None:
        self._restore((), result)
        seen = {self.keys[()]}
        frontier: list[tuple[int, ...]] = [()]
        for level in range(1, depth + 1):
            grown: list[tuple[int, ...]] = []
            for prefix in frontier:
                for index in range(len(self.scenario.letters)):
                    if time.monotonic() > deadline:
                        result.distinct = len(seen)
                        return  # status stays "unknown"; depth_complete is the last whole level
                    if self.ids and set(self.ids) <= set(result.failures):
                        result.distinct = len(seen)
                        result.status = "failed"
                        return  # every invariant judged has failed: nothing is left to pass or fail
                    key = self._apply(prefix, index, result)
                    if key is not None and key not in seen:
                        seen.add(key)
                        self.keys[prefix + (index,)] = key
                        grown.append(prefix + (index,))
            result.depth_complete = level
            frontier = grown
            if not frontier:
                result.status = "exhausted"
                break
        else:
            result.status = "bounded"
        result.distinct = len(seen)

    def _apply(self, prefix: tuple[int, ...], index: int, result: Exploration) -> str | None:
        """One transition: the letter applied in the state `prefix` reached, judged. Its new
        state's key, or None when the implementation failed on it (recorded as an error)."""
        if self.current != prefix:
            self._restore(prefix, result)
        op = self.scenario.letters[index]
        try:
            step = self.session.apply(op)
            result.transitions += 1
            violations = check_step(step, self.session.trace, self.ids)
            for check in self.extra:
                violations += list(check(step, self.session.trace))
            for violation in violations:
                if violation.invariant not in result.failures:
                    # The history without the refused siblings it went through: a refusal changed
                    # nothing, and the runner replays and shrinks this script before keeping it.
                    path = [*self.scenario.setup, *(self.scenario.letters[i] for i in prefix), op]
                    result.failures[violation.invariant] = Failure(violation.invariant, violation.message, path)
            key = state_key(self.session)
        except ImplementationFailed as failed:
            if failed.reason is not None:
                raise
            result.errors.append((str(failed), self.session.script()))
            self.current = None
            return None
        # A refusal leaves the state as it was: the next sibling goes on from here.
        self.current = prefix if key == self.keys.get(prefix) else prefix + (index,)
        return key

    def _restore(self, history: tuple[int, ...], result: Exploration) -> None:
        """Reset, the setup, then the history's letters (a driver has no fork). Only the setup's
        first run is shown to the session's observers: a replay repeats steps they have seen (its
        determinism is checked below), and the coverage observer would classify them again."""
        observers, first = self.session.observers, not self.keys
        if not first:
            self.session.observers = []
        try:
            self.session.reset()
            for op in self.scenario.setup:
                self.session.apply(op)
            for index in history:
                self.session.apply(self.scenario.letters[index])
                result.replayed += 1
        finally:
            self.session.observers = observers
        key = state_key(self.session)
        expected = self.keys.setdefault(history, key)
        if key != expected:
            raise ImplementationFailed(
                "explorer", f"the same operations reached a different state when run again after reset() "
                            f"(scenario {self.scenario.name}, {len(history)} operations): the implementation is "
                            f"nondeterministic or reset() does not forget everything", "nondeterministic")
        self.current = history


def explore(session: Session, scenario: Scenario, invariant_ids: Iterable[str], depth: int, deadline: float,
            extra_checks: Iterable[ExtraCheck] = ()) -> Exploration:
    return Explorer(session, scenario, invariant_ids, extra_checks).run(depth, deadline)
