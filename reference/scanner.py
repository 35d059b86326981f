"""The stray scanner (ADR 0104, decision D2 and amendment R1a): one pass over an execution's
retained log that mirrors the fold and finds every answer-list entry that
answered no suspend point, spec/legacy-logs.md sections 2 and 3.

The scanner is a pure object: all cross-event state lives in it, so feeding a
log in two pieces gives the verdict one feed of the whole log gives (R1a, "the
same single pass cut in two"), and feeding an event already consumed does
nothing, so two resumes sharing one scanner cannot double-count. Step kinds are
resolved when each event is fed (R1a residual 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Protocol

from loomcheck.reference.fold import TERMINAL
from loomcheck.spec.names import DISCARD_DECISION_PREFIX, IN_DOUBT_GATE

DISCARD_PREFIX = DISCARD_DECISION_PREFIX + ":"  # ADR 0104 D2: the operator override's reserved decision id
RECOVERED = "EXECUTION_RECOVERED"
NON_HUMAN = frozenset({"idempotent", "non-idempotent"})
WARNED_VERDICTS = ("passed", "at-risk", "unverifiable")  # harmless: nothing is said

Kinds = Callable[[str], "str | None"]  # step id -> "human" | "idempotent" | "non-idempotent" | None (unresolvable)


class EventLike(Protocol):
    seq: int
    type: str
    payload: object


class NonContiguous(Exception):
    """The events fed do not continue the sequence consumed: the caller scans the whole log."""


@dataclass(frozen=True, slots=True)
class Stray:
    index: int   # the entry's position in _resumePayloads
    seq: int     # the EXECUTION_RESUMED that added it
    why: str     # recovery | unparked | in-doubt-verdict | terminal | human-reanswer


@dataclass(frozen=True, slots=True)
class Classified:
    index: int
    seq: int     # 0 for an entry the snapshot holds
    why: str     # as Stray.why, or "snapshot"
    verdict: str  # passed | at-risk | harmless | unverifiable


@dataclass(frozen=True, slots=True)
class Ambiguity:
    step_id: str
    shape: str   # reparked-after-answer | stray-before-first-start
    seq: int     # the event that made it ambiguous


@dataclass(frozen=True)
class Verdict:
    classified: tuple[Classified, ...]
    ambiguities: tuple[Ambiguity, ...]   # unresolved only

    @property
    def refused(self) -> bool:
        return bool(self.ambiguities)

    @property
    def warned(self) -> tuple[str, ...]:
        present = {c.verdict for c in self.classified}
        return tuple(v for v in WARNED_VERDICTS if v in present)

    @property
    def clean(self) -> bool:
        """Nothing flagged: the only verdict a warm runtime may keep its scanner after (R1a)."""
        return not self.refused and not self.warned

    def ambiguous_steps(self) -> set[str]:
        return {a.step_id for a in self.ambiguities}


def _field(payload: object, key: str) -> object:
    return payload.get(key) if isinstance(payload, dict) else None


def held_entries(snapshot: Mapping[str, object] | None) -> list[object]:
    """The answer list a snapshot holds: _resumePayloads, or the one pre-1.16 _resumePayload (ADR 0057)."""
    variables = _field(snapshot, "variables") if snapshot else None
    if not isinstance(variables, dict):
        return []
    if isinstance(variables.get("_resumePayloads"), list):
        return list(variables["_resumePayloads"])
    return [variables["_resumePayload"]] if "_resumePayload" in variables else []  # ADR 0057 Legacy fallback


@dataclass
class StrayScanner:
    """Feed it the retained log, in one piece or many; ask for the verdict at any point."""

    consumed: int = 0                       # the last seq fed
    status: str = "pending"
    park: str | None = None                 # None | "gate" | "in-doubt" | "human"
    park_step: str | None = None            # the human step parked, when park == "human"
    park_attributed: bool = False           # the park carried the kernel-set condition.stepId
    entries: int = 0
    previous_type: str | None = None
    previous_step: str | None = None        # the stepId of the previous event when it was STEP_STARTED
    last_gate_park: int = 0                 # seq of the newest gate park fed
    strays: list[Stray] = field(default_factory=list)
    held: list[tuple[int, bool]] = field(default_factory=list)   # snapshot entries: (index, equals {})
    started: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    found: list[Ambiguity] = field(default_factory=list)
    discards: dict[str, int] = field(default_factory=dict)       # step -> seq of its __loom_discard__ decision

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, object], seq: int) -> "StrayScanner":
        """Start where retention left off: the snapshot's entries are unexplained (D2, unverifiable)."""
        condition = _field(snapshot, "suspendedOn")
        status = str(_field(snapshot, "status") or "pending")
        steps = _field(snapshot, "steps")
        scanner = cls(consumed=seq, status=status,
                      started=set(steps) if isinstance(steps, dict) else set())
        if status == "suspended" and isinstance(condition, dict):
            step_id = condition.get("stepId")
            if condition.get("on") == IN_DOUBT_GATE:
                scanner.park = "in-doubt"
            elif isinstance(step_id, str):
                scanner.park, scanner.park_step, scanner.park_attributed = "human", step_id, True
            else:
                scanner.park = "gate"
        held = held_entries(snapshot)
        scanner.entries = len(held)
        scanner.held = [(i, value == {}) for i, value in enumerate(held)]
        return scanner

    # -- feeding -------------------------------------------------------------
    def feed(self, events: Iterable[EventLike], kinds: Kinds) -> None:
        for event in events:
            if event.seq <= self.consumed:
                continue  # ADR 0104 R1a: idempotent, already consumed
            if event.seq != self.consumed + 1:
                raise NonContiguous(f"expected seq {self.consumed + 1}, got {event.seq}")
            self._apply(event, kinds)
            self.consumed = event.seq

    def _apply(self, event: EventLike, kinds: Kinds) -> None:
        kind, payload, seq = event.type, event.payload, event.seq
        step_id = _field(payload, "stepId")
        if kind == "EXECUTION_STARTED":
            self.status = "running"
        elif kind == "STEP_STARTED" and isinstance(step_id, str):
            self._step_started(step_id, seq, kinds)
        elif kind == "EXECUTION_SUSPENDED":
            self._suspended(_field(payload, "condition"), seq, kinds)
        elif kind == "EXECUTION_RESUMED":
            self._resumed(payload, seq)
        elif kind in ("EXECUTION_COMPLETED", "EXECUTION_FAILED", "EXECUTION_CANCELLED"):
            self.status, self.park = kind.removeprefix("EXECUTION_").lower(), None
        elif kind == "DECISION_RECORDED":
            decision = _field(payload, "decisionId")
            if isinstance(decision, str) and decision.startswith(DISCARD_PREFIX):
                self.discards[decision[len(DISCARD_PREFIX):]] = seq
        self.previous_type = kind
        self.previous_step = step_id if kind == "STEP_STARTED" and isinstance(step_id, str) else None

    def _step_started(self, step_id: str, seq: int, kinds: Kinds) -> None:
        if step_id in self.started:
            return
        self.started.add(step_id)
        if kinds(step_id) in NON_HUMAN:
            return
        # ADR 0104 D2, the second shape: a human (or unresolvable) step's first start with an unspent
        # stray before it; the step would take the stray as its approval.
        if any(s.seq > self.last_gate_park for s in self.strays):
            self.found.append(Ambiguity(step_id, "stray-before-first-start", seq))

    def _suspended(self, condition: object, seq: int, kinds: Kinds) -> None:
        self.status = "suspended"
        self.park_step, self.park_attributed = None, False
        step_id = _field(condition, "stepId")
        if _field(condition, "on") == IN_DOUBT_GATE:
            self.park = "in-doubt"
        elif isinstance(step_id, str):
            self.park, self.park_step, self.park_attributed = "human", step_id, True  # kernel-set (1.20.0)
        elif self.previous_step is not None and kinds(self.previous_step) not in NON_HUMAN:
            # ADR 0104 D2, attribution: a pre-0104 human effect throws right after its step starts.
            self.park, self.park_step = "human", self.previous_step
            if self.previous_step in self.answered:
                self.found.append(Ambiguity(self.previous_step, "reparked-after-answer", seq))
        else:
            self.park = "gate"
            self.last_gate_park = seq  # ADR 0104 D2: a gate park proves every entry before it spent

    def _resumed(self, payload: object, seq: int) -> None:
        parked = self.status == "suspended"
        if payload is None and (not parked or self.park == "in-doubt"):  # ADR 0104 D3: status only
            self.status, self.park = "running", None
            return
        index = self.entries
        self.entries += 1
        why = None
        if parked and self.park == "human" and self.park_step is not None:
            if self.park_step in self.answered and not self.park_attributed:
                why = "human-reanswer"  # every answer after the first would reach a later gate
            self.answered.add(self.park_step)
        elif parked and self.park == "in-doubt":
            why = "in-doubt-verdict"
        elif not parked:
            why = ("terminal" if self.status in TERMINAL
                   else "recovery" if self.previous_type == RECOVERED else "unparked")
        if why is not None:
            self.strays.append(Stray(index, seq, why))
        self.status, self.park = "running", None

    # -- the verdict ---------------------------------------------------------
    def verdict(self, live: bool = False) -> Verdict:
        """D2's classification as of what was fed; `live` judges a terminal execution
        as running (a resumeAs re-opening it)."""
        ended = self.status in TERMINAL and not live
        # ADR 0104 D2: passed, at-risk, harmless; unverifiable for what only the snapshot holds.
        classified = [Classified(s.index, s.seq, s.why,
                                 "passed" if s.seq < self.last_gate_park else "harmless" if ended else "at-risk")
                      for s in self.strays]
        if self.last_gate_park == 0:  # no gate park in the retained tail proves the held entries spent
            classified += [Classified(index, 0, "snapshot", "harmless" if ended else "unverifiable")
                           for index, empty in self.held if empty]
        unresolved = tuple(a for a in self.found if not (a.step_id in self.discards
                                                         and a.seq < self.discards[a.step_id]))
        return Verdict(tuple(sorted(classified, key=lambda c: c.index)), unresolved)


def scan(events: list[EventLike], snapshot: Mapping[str, object] | None, kinds: Kinds,
         live: bool = False) -> Verdict:
    """One full pass over a retained log (and the snapshot it starts from, when its prefix is gone)."""
    first = events[0].seq if events else None
    if snapshot is not None and (first is None or first > 1):
        start = (first - 1) if first is not None else int(_field(snapshot, "sequence") or 0)
        scanner = StrayScanner.from_snapshot(snapshot, start)
    else:
        scanner = StrayScanner(consumed=(first - 1) if first else 0)
    scanner.feed(events, kinds)
    return scanner.verdict(live)
