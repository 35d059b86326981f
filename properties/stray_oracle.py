"""The stray oracle: spec/legacy-logs.md sections 2 and 3 read over a whole log, the
independent second reading the reference's incremental scanner is compared with.
Labels every event in one walk, then judges with whole-log queries; plain Python,
nothing from the reference. Why it is written so: docs/stray-oracle.md."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from loomcheck.spec.names import DISCARD_DECISION_PREFIX, IN_DOUBT_GATE

JSON = Any
DISCARD_PREFIX = DISCARD_DECISION_PREFIX + ":"   # ADR 0104 D2: the operator override's decision id
TERMINAL = frozenset({"completed", "failed", "cancelled"})
NON_HUMAN = frozenset({"idempotent", "non-idempotent"})
WARNED = ("passed", "at-risk", "unverifiable")   # the verdicts a kernel warns about (section 4)

Kinds = Callable[[str], "str | None"]


# -- what the oracle answers -------------------------------------------------------
@dataclass(frozen=True)
class Classified:
    """One entry that answered no suspend point (or, seq 0 and why "snapshot", one
    the snapshot holds that the retained log does not explain) and its verdict."""

    index: int      # its position in the answer list
    seq: int        # the EXECUTION_RESUMED that created it; 0 when the snapshot holds it
    why: str        # in-doubt-verdict | terminal | recovery | unparked | human-reanswer | snapshot
    verdict: str    # passed | at-risk | harmless | unverifiable


@dataclass(frozen=True)
class Ambiguity:
    """A human step whose answer cannot be told apart from another entry (ADR 0104 D2)."""

    step_id: str
    shape: str      # reparked-after-answer | stray-before-first-start
    seq: int        # the event that made it ambiguous (the park, or the first start)


@dataclass(frozen=True)
class Expected:
    """The verdict of a scan: what is classified, and the ambiguities left unresolved."""

    classified: tuple[Classified, ...]
    ambiguities: tuple[Ambiguity, ...]          # unresolved only
    answers: tuple[JSON, ...] = ()              # the answer list as the current fold holds it (ADR 0057, D3)
    latest: JSON = None                         # `_resumePayload`: the latest entry (the pre-0104 verdict reader's)
    status: str = "pending"                     # the execution's status at the end of the log
    park: str | None = None                     # "gate", "in-doubt", "human" or None: where it is parked
    listed: bool = True                         # False while `answers` is a pre-1.16 snapshot's single
                                                # `_resumePayload`: the fold's next append starts a new list

    @property
    def refused(self) -> bool:
        """Section 3: any unresolved ambiguity refuses, ambiguous-legacy-answers."""
        return bool(self.ambiguities)

    @property
    def warned(self) -> frozenset[str]:
        """Section 4: the verdicts present that a kernel warns about."""
        return frozenset(c.verdict for c in self.classified if c.verdict in WARNED)

    def ambiguous_steps(self) -> frozenset[str]:
        return frozenset(a.step_id for a in self.ambiguities)


# -- step kinds ----------------------------------------------------------------------
def kinds_of(program: Mapping[str, JSON] | Any) -> Kinds:
    """Step id -> "human" | "idempotent" | "non-idempotent"; None for a step the
    program does not have (unresolvable: treated as possibly human, ADR 0104 D2).
    Takes a flow program as JSON, or anything with `model_dump` (a FlowProgram)."""
    data = program if isinstance(program, Mapping) else program.model_dump(mode="json")
    kinds: dict[str, str] = {}
    for op in _calls(data.get("body") or []):
        if isinstance(op, Mapping) and op.get("op") == "step" and isinstance(op.get("id"), str):
            kinds[op["id"]] = str(op.get("kind") or "idempotent")
    return kinds.get


def _calls(body: list[JSON]) -> list[JSON]:
    """Every op in call order, parallel branches flattened."""
    calls: list[JSON] = []
    for op in body:
        if isinstance(op, Mapping) and op.get("op") == "parallel":
            calls.extend(op.get("branches") or [])
        else:
            calls.append(op)
    return calls


def possibly_human(step_id: str, kinds: Kinds) -> bool:
    """ADR 0104 D2: "unless that step is known to run a non-human effect" (fail closed)."""
    return kinds(step_id) not in NON_HUMAN


# -- phase 1: what each event is -----------------------------------------------------
@dataclass(frozen=True)
class Park:
    seq: int
    kind: str                   # gate | in-doubt | human
    step_id: str | None = None  # for a human park
    attributed: bool = False    # a kernel-set condition.stepId (1.20.0)


@dataclass(frozen=True)
class Stray:
    index: int
    seq: int
    why: str


@dataclass
class Labels:
    """Everything phase 1 found, in log order."""

    parks: list[Park] = field(default_factory=list)
    strays: list[Stray] = field(default_factory=list)
    first_starts: list[tuple[str, int]] = field(default_factory=list)   # (step, seq)
    reparks: list[tuple[str, int]] = field(default_factory=list)        # unattributed human parks of answered steps
    discards: list[tuple[str, int]] = field(default_factory=list)       # (step, seq) of __loom_discard__ decisions
    answers: list[JSON] | None = None   # the fold's list; None while a pre-1.16 snapshot's single entry stands
    legacy: list[JSON] = field(default_factory=list)   # that single entry, when there is one
    latest: JSON = None
    status: str = "pending"
    park: Park | None = None
    entries: int = 0


@dataclass(frozen=True)
class Base:
    """What the scan starts from: nothing, or the snapshot (section 5)."""

    status: str
    park: Park | None
    entries: list[JSON]          # the snapshot's answer list (section 5)
    pre_116: bool                # only `_resumePayload`: a pre-1.16 snapshot (ADR 0057 legacy fallback)
    latest: JSON
    started: frozenset[str]
    answered: frozenset[str]


EMPTY = Base("pending", None, [], False, None, frozenset(), frozenset())


def base_of(snapshot: Mapping[str, JSON] | None) -> Base:
    """Section 5: the snapshot's answer list is `_resumePayloads`, or for a snapshot
    written before 1.16.0 the one entry `_resumePayload`. Its steps have started
    (section 2, STEP_STARTED). Section 2 names the snapshot for "started" only, so
    no step counts as answered from it, not even a completed human step."""
    if snapshot is None:
        return EMPTY
    variables = snapshot.get("variables") if isinstance(snapshot.get("variables"), Mapping) else {}
    listed = variables.get("_resumePayloads")
    pre_116 = not isinstance(listed, list) and "_resumePayload" in variables
    entries = list(listed) if isinstance(listed, list) else ([variables["_resumePayload"]] if pre_116 else [])
    steps = snapshot.get("steps") if isinstance(snapshot.get("steps"), Mapping) else {}
    status = str(snapshot.get("status") or "pending")
    condition = snapshot.get("suspendedOn")
    # No previous event is retained, so an unattributed park there reads as a gate park.
    park = _park_of(0, condition if isinstance(condition, Mapping) else {}, None, lambda _: None) \
        if status == "suspended" else None
    return Base(status, park, entries, pre_116, copy.deepcopy(variables.get("_resumePayload")),
                frozenset(steps), frozenset())


def _park_of(seq: int, condition: Mapping[str, JSON], previous: Mapping[str, JSON] | None, kinds: Kinds) -> Park:
    """Section 2, EXECUTION_SUSPENDED: in-doubt, attributed human, unattributed human
    (the STEP_STARTED right before it, unless that step is known non-human), else a gate."""
    if condition.get("on") == IN_DOUBT_GATE:
        return Park(seq, "in-doubt")
    if isinstance(condition.get("stepId"), str):
        return Park(seq, "human", condition["stepId"], attributed=True)
    before = _started_step(previous)
    if before is not None and possibly_human(before, kinds):
        return Park(seq, "human", before, attributed=False)
    return Park(seq, "gate")


def _started_step(event: Mapping[str, JSON] | None) -> str | None:
    if event is None or event.get("type") != "STEP_STARTED":
        return None
    step = _field(event.get("payload"), "stepId")
    return step if isinstance(step, str) else None


def _field(payload: JSON, key: str) -> JSON:
    return payload.get(key) if isinstance(payload, Mapping) else None


def _label(events: list[Mapping[str, JSON]], base: Base, kinds: Kinds) -> Labels:
    """Phase 1: one walk mirroring the fold (section 2's table, row by row)."""
    labels = Labels(answers=None if base.pre_116 else list(base.entries), legacy=list(base.entries) if base.pre_116 else [],
                    latest=copy.deepcopy(base.latest), status=base.status, park=base.park, entries=len(base.entries))
    started, answered = set(base.started), set(base.answered)
    previous: Mapping[str, JSON] | None = None
    for event in events:
        kind, payload, seq = event.get("type"), event.get("payload"), int(event.get("seq") or 0)
        if kind == "EXECUTION_STARTED":
            labels.status, labels.park = "running", None
        elif kind == "STEP_STARTED":
            step = _field(payload, "stepId")
            if isinstance(step, str):
                if possibly_human(step, kinds) and step not in started:
                    labels.first_starts.append((step, seq))
                started.add(step)
        elif kind == "EXECUTION_SUSPENDED":
            condition = _field(payload, "condition")
            park = _park_of(seq, condition if isinstance(condition, Mapping) else {}, previous, kinds)
            if park.kind == "human" and not park.attributed and park.step_id in answered:
                labels.reparks.append((str(park.step_id), seq))
            labels.status, labels.park = "suspended", park
            labels.parks.append(park)
        elif kind == "EXECUTION_RESUMED":
            _resumed(labels, payload, seq, previous, answered)
        elif kind in ("EXECUTION_COMPLETED", "EXECUTION_FAILED", "EXECUTION_CANCELLED"):
            labels.status, labels.park = str(kind).removeprefix("EXECUTION_").lower(), None
        elif kind == "DECISION_RECORDED":
            decision = _field(payload, "decisionId")
            if isinstance(decision, str) and decision.startswith(DISCARD_PREFIX):
                labels.discards.append((decision[len(DISCARD_PREFIX):], seq))
        previous = event
    return labels


def _resumed(labels: Labels, payload: JSON, seq: int, previous: Mapping[str, JSON] | None, answered: set[str]) -> None:
    """Section 2, EXECUTION_RESUMED: status-only (D3), an answer, or a stray and why."""
    parked = labels.status == "suspended" and labels.park is not None
    park = labels.park if parked else None
    if payload is None and (park is None or park.kind == "in-doubt"):
        labels.status, labels.park = "running", None  # ADR 0104 D3: status only
        return
    why = _stray_reason(labels.status, park, previous, answered)
    if why is None and park is not None and park.kind == "human":
        answered.add(str(park.step_id))
    if why is not None:
        labels.strays.append(Stray(labels.entries, seq, why))
    _append_entry(labels, payload)
    labels.status, labels.park = "running", None


def _stray_reason(status: str, park: Park | None, previous: Mapping[str, JSON] | None,
                  answered: set[str]) -> str | None:
    """None for an answer; otherwise why the entry answered no suspend point."""
    if park is not None and park.kind == "gate":
        return None
    if park is not None and park.kind == "human":
        reanswer = not park.attributed and park.step_id in answered
        return "human-reanswer" if reanswer else None
    if park is not None:
        return "in-doubt-verdict"
    if status in TERMINAL:
        return "terminal"
    if previous is not None and previous.get("type") == "EXECUTION_RECOVERED":
        return "recovery"
    return "unparked"


def _append_entry(labels: Labels, payload: JSON) -> None:
    """The fold's append (ADR 0057): a pre-1.16 snapshot's single entry is not in a
    list, so the fold's first append starts the list without it."""
    if labels.answers is None:
        labels.answers = []
    labels.answers.append(copy.deepcopy(payload))
    labels.latest = copy.deepcopy(payload)
    labels.entries += 1


# -- phase 2: the verdict ------------------------------------------------------------
def _gate_park_after(labels: Labels, seq: int) -> bool:
    """Only a gate park proves the entries before it spent; a human park proves nothing."""
    return any(p.kind == "gate" and p.seq > seq for p in labels.parks)


def _gate_park_between(labels: Labels, after: int, before: int) -> bool:
    return any(p.kind == "gate" and after < p.seq < before for p in labels.parks)


def _stray_verdict(labels: Labels, stray: Stray, live: bool) -> str:
    if _gate_park_after(labels, stray.seq):
        return "passed"
    if labels.status in TERMINAL and not live:
        return "harmless"
    return "at-risk"


def _snapshot_verdicts(labels: Labels, base: Base, live: bool) -> list[Classified]:
    """Section 3: the snapshot's entries are unexplained. A gate park in the retained
    log proves them spent (nothing said); otherwise each `{}` (what the old recovery
    wrote) is unverifiable, or harmless when terminal and not live."""
    if _gate_park_after(labels, 0):
        return []
    verdict = "harmless" if labels.status in TERMINAL and not live else "unverifiable"
    return [Classified(i, 0, "snapshot", verdict) for i, entry in enumerate(base.entries) if entry == {}]


def _ambiguities(labels: Labels) -> list[Ambiguity]:
    """Both shapes, in log order: an unspent stray before a human step's first start,
    and a pre-0104 park of a step after it was answered."""
    found: list[tuple[int, Ambiguity]] = []
    for step, seq in labels.first_starts:
        unspent = any(s.seq < seq and not _gate_park_between(labels, s.seq, seq) for s in labels.strays)
        if unspent:
            found.append((seq, Ambiguity(step, "stray-before-first-start", seq)))
    for step, seq in labels.reparks:
        found.append((seq, Ambiguity(step, "reparked-after-answer", seq)))
    return [a for _, a in sorted(found, key=lambda pair: pair[0])]


def _resolved(labels: Labels, ambiguity: Ambiguity) -> bool:
    """An override decision for the step resolves every ambiguity of it found before it."""
    return any(step == ambiguity.step_id and seq > ambiguity.seq for step, seq in labels.discards)


def _judge(labels: Labels, base: Base, live: bool) -> Expected:
    classified = _snapshot_verdicts(labels, base, live)
    classified += [Classified(s.index, s.seq, s.why, _stray_verdict(labels, s, live)) for s in labels.strays]
    unresolved = tuple(a for a in _ambiguities(labels) if not _resolved(labels, a))
    answers = labels.answers if labels.answers is not None else labels.legacy
    park = labels.park.kind if labels.status == "suspended" and labels.park is not None else None
    return Expected(tuple(classified), unresolved, tuple(copy.deepcopy(answers)), copy.deepcopy(labels.latest),
                    labels.status, park, listed=labels.answers is not None)


def scan_log(events: list[Mapping[str, JSON]], snapshot: Mapping[str, JSON] | None, kinds: Kinds,
             live: bool = False) -> Expected:
    """The verdict of spec/legacy-logs.md (ADR 0104 D2) on a retained log.

    `events` are `{"seq", "type", "payload"}`, oldest first. The snapshot (a folded
    state as JSON) is used only when the prefix was retained away: the first event's
    seq > 1, or there are no events. `live` is true for a resumeAs onto a terminal
    execution, which re-opens it ("Re-opening a terminal execution is judged as live")."""
    first = int(events[0].get("seq") or 0) if events else None
    base = base_of(snapshot) if snapshot is not None and (first is None or first > 1) else EMPTY
    return _judge(_label(list(events), base, kinds), base, live)


def expected_json(expected: Expected) -> dict[str, JSON]:
    """The verdict as plain JSON (the fleet corpus's `expected` block, first half)."""
    return {
        "classified": [{"index": c.index, "seq": c.seq, "why": c.why, "verdict": c.verdict}
                       for c in expected.classified],
        "ambiguities": [{"stepId": a.step_id, "shape": a.shape, "seq": a.seq} for a in expected.ambiguities],
        "warned": sorted(expected.warned),
        "refused": expected.refused,
    }


def same_json(a: JSON, b: JSON) -> bool:
    """JSON equality, key order aside (what the fold's fact comparison uses)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


__all__ = ["Ambiguity", "Classified", "Expected", "kinds_of", "possibly_human", "scan_log", "base_of",
           "expected_json", "same_json", "WARNED"]
