"""The log pairs CrossHair compares (symbolic/contracts.py): a finite event alphabet
decoded from ints, and the stray scanner, the fold and the suite's oracle as plain
functions of one encoded log. Plain Python that imports no pydantic, so CrossHair
traces all of it (docs/model-checking.md#crosshair)."""

from __future__ import annotations

from loomcheck.properties.stray_oracle import scan_log
from loomcheck.reference.events import Event
from loomcheck.reference.fold import State, fold
from loomcheck.reference.scanner import StrayScanner, Verdict, scan
from loomcheck.spec.names import DISCARD_DECISION_PREFIX, IN_DOUBT_GATE

# The event alphabet. A log is a list of (type code, argument code) pairs; both
# are clamped into the alphabet, so every int pair is a valid event and
# CrossHair never wastes a path on an undecodable one.
MAX_EVENTS = 6          # the longest verdict shape, a human re-answer (start, park, answer, start, park, answer)
STEPS = ("h", "i", "u")  # a human step, an idempotent step, a step the program lacks (unresolvable)
KINDS = {"h": "human", "i": "idempotent"}
CONDITIONS = ("gate", "in-doubt", "attributed-human")   # the parks _condition builds
PAYLOADS = ("null", "empty", "answer")                   # the resume payloads _payload builds
TERMINALS = ("EXECUTION_COMPLETED", "EXECUTION_FAILED", "EXECUTION_CANCELLED")
TYPES = ("EXECUTION_STARTED", "STEP_STARTED", "EXECUTION_SUSPENDED", "EXECUTION_RESUMED",
         "EXECUTION_RECOVERED", "TERMINAL", "DECISION_RECORDED")

LogCode = list[tuple[int, int]]


def kinds(step_id: str) -> str | None:
    """The alphabet's program: h is human, i idempotent, anything else unresolvable."""
    return KINDS.get(step_id)


def _pick(options: tuple[str, ...], code: int) -> int:
    """The index of options[code], anything past either end clamped to it.
    Comparisons, not `%`: they keep every constraint linear, which z3 decides
    quickly (with a modulo the search missed a two-event counterexample in 10 s)."""
    for index in range(len(options) - 1):
        if code <= index:
            return index
    return len(options) - 1


def _condition(arg: int) -> dict[str, object]:
    """A fresh dict each time (no deepcopy: copying under CrossHair's tracing is slow)."""
    which = _pick(CONDITIONS, arg)
    if which == 0:
        return {"on": "Gate"}                          # a gate park (or, after STEP_STARTED h/u, a pre-0104 human park)
    if which == 1:
        return {"on": IN_DOUBT_GATE}                   # ADR 0104: an in-doubt park
    return {"on": "HumanInput", "stepId": "h"}         # a kernel-attributed human park (1.20.0)


def _payload(arg: int) -> object:
    which = _pick(PAYLOADS, arg)
    return None if which == 0 else {} if which == 1 else {"ok": True}  # status-only candidate, recovery's {}, an answer


def _event(seq: int, code: int, arg: int) -> Event:
    kind = TYPES[_pick(TYPES, code)]
    if kind == "STEP_STARTED":
        return Event("x", seq, kind, {"stepId": STEPS[_pick(STEPS, arg)], "attempt": 1})
    if kind == "EXECUTION_SUSPENDED":
        return Event("x", seq, kind, {"condition": _condition(arg)})
    if kind == "EXECUTION_RESUMED":
        return Event("x", seq, kind, _payload(arg))
    if kind == "TERMINAL":
        return Event("x", seq, TERMINALS[_pick(TERMINALS, arg)], {})
    if kind == "DECISION_RECORDED":
        return Event("x", seq, kind, {"decisionId": f"{DISCARD_DECISION_PREFIX}:{STEPS[_pick(STEPS, arg)]}",
                                      "choice": "discard"})
    return Event("x", seq, kind, {"flowId": "f", "input": None} if kind == "EXECUTION_STARTED" else {})


def decode_log(log: LogCode) -> list[Event]:
    """The first MAX_EVENTS codes as a contiguous log starting at seq 1."""
    return [_event(seq, code, arg) for seq, (code, arg) in enumerate(log[:MAX_EVENTS], start=1)]


def cut_at(log: LogCode, cut: int) -> int:
    """Where to cut the decoded log: clamped into 0..its length."""
    return min(max(cut, 0), len(log), MAX_EVENTS)


# The stray scanner and the fold.
def verdict_tuple(verdict: Verdict) -> tuple[tuple[tuple[object, ...], ...], tuple[tuple[object, ...], ...]]:
    """A verdict as plain tuples, the form both sides of a comparison return."""
    return (tuple((c.index, c.seq, c.why, c.verdict) for c in verdict.classified),
            tuple((a.step_id, a.shape, a.seq) for a in verdict.ambiguities))


def scan_whole(log: LogCode) -> tuple[object, ...]:
    """One feed of the whole log, once per place the log can be cut (0..len)."""
    verdict = verdict_tuple(scan(decode_log(log), None, kinds))
    return tuple(verdict for _ in range(min(len(log), MAX_EVENTS) + 1))


def scan_in_two(log: LogCode) -> tuple[object, ...]:
    """R1a: the scanner fed the log in two pieces, for every cut. Every cut in one
    call, not a symbolic `cut` argument: with the cut symbolic, the search missed
    a two-event counterexample in 15 s (the cut must land between the two)."""
    return in_two_at_every_cut(StrayScanner, decode_log(log))


def in_two_at_every_cut(scanner_class: type[StrayScanner], events: list[Event]) -> tuple[object, ...]:
    """The verdict of a fresh `scanner_class` fed events[:at] then events[at:], for each at."""
    verdicts = []
    for at in range(len(events) + 1):
        scanner = scanner_class(consumed=0)
        scanner.feed(events[:at], kinds)
        scanner.feed(events[at:], kinds)
        verdicts.append(verdict_tuple(scanner.verdict()))
    return tuple(verdicts)


def answers_of(state: State) -> tuple[object, ...]:
    """What the fold holds of the answers: the ordered list, the latest, the status."""
    variables = state.variables
    return (tuple(variables.get("_resumePayloads", [])), variables.get("_resumePayload"), state.status)


def reference_reading(log: LogCode) -> tuple[object, ...]:
    """The reference kernel's reading of a log: the scanner's verdict and the fold's answers."""
    events = decode_log(log)
    return verdict_tuple(scan(events, None, kinds)) + answers_of(fold(events))


def oracle_reading(log: LogCode) -> tuple[object, ...]:
    """The oracle's reading of the same log (properties/stray_oracle.py, written independently)."""
    expected = scan_log([event.to_json() for event in decode_log(log)], None, kinds)
    return (tuple((c.index, c.seq, c.why, c.verdict) for c in expected.classified),
            tuple((a.step_id, a.shape, a.seq) for a in expected.ambiguities),
            tuple(expected.answers), expected.latest, expected.status)


def fold_whole(log: LogCode, cut: int) -> dict[str, object]:
    """The fold of the whole log as its JSON snapshot (`cut` unused: the pair shares one signature)."""
    return fold(decode_log(log)).to_json()


def fold_from_snapshot(log: LogCode, cut: int) -> dict[str, object]:
    """Fold the prefix, write its snapshot as JSON, read it back, fold the rest:
    what a kernel does once retention has dropped the prefix."""
    events, at = decode_log(log), cut_at(log, cut)
    snapshot = State.from_json(fold(events[:at]).to_json())
    return fold(events[at:], snapshot).to_json()
