"""CrossHair checks on the kernel's pure functions (issue 9, "Symbolic checks").

CrossHair runs Python on symbolic arguments and asks z3 for inputs that take new
paths. It sees only pure Python: compiled code (pydantic's core, hashlib,
str.translate) runs on concrete values, so every function checked here is plain
Python and imports no pydantic. Each entry point takes arguments CrossHair can
generate (ints, strings, small lists and tuples) and decodes them over a finite
alphabet, so the search spends its paths on the shapes that matter.

Each check is a pair of functions with one signature, compared as
`crosshair diffbehavior` compares them (same result or the same exception, else
a counterexample); symbolic/crosshair_search.py runs the search and stops at the
first difference. `crosshair diffbehavior A B --per_condition_timeout 20` runs
the same pair by hand.

- scanner-cut (scan.incremental-equals-full, ADR 0104 R1a): the stray scanner fed
  the log in two pieces, at every cut, vs one feed of the whole log;
- oracle: the reference scanner's verdict and the fold's answer list, latest
  answer and status vs properties/stray_oracle.py, the suite's independent reading of
  spec/legacy-logs.md (ADR 0104 D2/D3, ADR 0057);
- fold-snapshot (fold.state-is-fold-of-log): the fold of the whole log vs the
  fold of the rest from the JSON snapshot of the prefix;
- canonical (ADR 0117 D1): spec/canonical.py vs `spec_canonical_text` below,
  written from spec/canonical-json.md alone.

What CrossHair does not earn here, and so is not wired in:
- the view digest: sha256 runs in hashlib (compiled), so CrossHair hashes the
  realized text; nothing is explored beyond the canonical text, and the
  published vectors pin digest = sha256(text);
- a canonical round-trip contract (json.loads(text) == value): the existing
  Hypothesis property in tests/test_canonical.py already checks it, and the
  independent spec reading is the stronger oracle for the text;
- number layout, UTF-16 name order and the spelling of escapes: CrossHair did
  not find those mutants in 35 s (floats are realized by repr/%e, the escapes
  happen inside str.translate, and the name order needs an astral name next to
  one in U+E000..U+FFFF); Hypothesis and the vectors find them.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Union

from loomcheck.properties.stray_oracle import scan_log
from loomcheck.reference.events import Event
from loomcheck.reference.fold import State, fold
from loomcheck.reference.scanner import StrayScanner, Verdict, scan
from loomcheck.spec.canonical import CanonicalError, canonical_json
from loomcheck.spec.names import DISCARD_DECISION_PREFIX, IN_DOUBT_GATE

# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------
# Canonical JSON, read from spec/canonical-json.md alone. Straightforward on
# purpose: recursive (after an iterative depth check, as the spec allows), a
# separate shortest-digits search, its own escape table.
SPEC_MAX_DEPTH = 1024
SPEC_MAX_INT = 9007199254740991
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class SpecRefused(ValueError):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _spec_depth(value: object) -> int:
    deepest, todo = 0, [(value, 0)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, list):
            children = list(node)
        elif isinstance(node, dict):
            children = list(node.values())
        else:
            continue
        if level + 1 > SPEC_MAX_DEPTH:
            return level + 1
        deepest = max(deepest, level + 1)
        todo.extend((child, level + 1) for child in children)
    return deepest


def _spec_string(text: str) -> str:
    out = []
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            raise SpecRefused("lone-surrogate")
        if char in _SHORT:
            out.append(_SHORT[char])
        elif ord(char) < 0x20:
            out.append("\\u00" + "0123456789abcdef"[ord(char) >> 4] + "0123456789abcdef"[ord(char) & 15])
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _spec_digits(x: float) -> tuple[str, int]:
    """Shortest digits s and n with x == 0.s * 10**n (spec step 4): for the first
    precision at which some decimal reads back as x, the one closest to x (ties:
    the even one, as ECMA-262 says). The correctly rounded %e form alone is not
    enough: at 2**-24 the 16-digit tie rounds to ...062, which reads back as
    another double, while ...063 reads back as x. (This implementation's first
    cut did exactly that: CrossHair pointed at -2**-24, and Hypothesis's floats()
    reproduced it on plain values.)"""
    exact = Fraction(x)
    for precision in range(1, 18):
        mantissa, exponent = f"{x:.{precision - 1}e}".split("e")
        digits, scale = int(mantissa.replace(".", "")), int(exponent) - (precision - 1)
        candidates = [m for m in (digits - 1, digits, digits + 1)
                      if len(str(m)) == precision and float(f"{m}e{scale}") == x]
        if candidates:
            best = min(candidates, key=lambda m: (abs(Fraction(m) * Fraction(10) ** scale - exact), m % 2))
            text = str(best).rstrip("0")
            return text, scale + precision
    raise AssertionError("17 digits always round-trip a double")


def _spec_number(x: float) -> str:
    if x != x or x in (math.inf, -math.inf):
        raise SpecRefused("not-json")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    s, n = _spec_digits(abs(x))
    k = len(s)
    if k <= n <= 21:
        return sign + s + "0" * (n - k)
    if 0 < n <= 21:
        return sign + s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + s
    e = n - 1
    return sign + s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def _utf16_units(name: str) -> list[int]:
    units = []
    for char in name:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            units += [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]
        else:
            units.append(code)
    return units


def _spec_value(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        if -SPEC_MAX_INT <= value <= SPEC_MAX_INT:
            return str(value)
        raise SpecRefused("integer-range")
    if type(value) is float:
        return _spec_number(value)
    if type(value) is str:
        return _spec_string(value)
    if type(value) is list:
        return "[" + ",".join(_spec_value(item) for item in value) + "]"
    if type(value) is dict:
        for name in value:
            if type(name) is not str:
                raise SpecRefused("not-json")
            _spec_string(name)  # a name with a lone surrogate is refused before sorting
        names = sorted(value, key=_utf16_units)
        return "{" + ",".join(_spec_string(name) + ":" + _spec_value(value[name]) for name in names) + "}"
    raise SpecRefused("not-json")


def spec_canonical_text(value: object) -> str:
    if _spec_depth(value) > SPEC_MAX_DEPTH:
        raise SpecRefused("too-deep")
    return _spec_value(value)


# The values CrossHair generates for the canonical pair: every scalar type, an
# array and an object (the two containers' own rules: order kept, names sorted).
Scalar = Union[None, bool, int, float, str]
JsonLike = Union[Scalar, list[Scalar], dict[str, Scalar]]


def as_doubles(value: JsonLike) -> JsonLike:
    """The value with every float made concrete (repr realizes a symbolic one).
    CrossHair models a float as a real number; both canonicalisers print it with
    repr or %e, which realize it anyway, so its layout is explored by chosen
    values, not solved for: no float-layout mutant (exponent without "+", the
    tie next to 2**-24) was found in 35 s either way. Realizing first spends the
    paths on names, strings and ints instead (the DEL-escape mutant: 16 paths
    with this, 191 without)."""
    if isinstance(value, float):
        return float(repr(value))
    if isinstance(value, list):
        return [as_doubles(item) for item in value]
    if isinstance(value, dict):
        return {name: as_doubles(item) for name, item in value.items()}
    return value


def canonical_reference(value: JsonLike) -> str:
    """spec/canonical.py's text, or "refused:<reason>"."""
    try:
        return canonical_json(as_doubles(value))
    except CanonicalError as refused:
        return "refused:" + refused.reason


def canonical_spec(value: JsonLike) -> str:
    """The text by spec_canonical_text, or "refused:<reason>"."""
    try:
        return spec_canonical_text(as_doubles(value))
    except SpecRefused as refused:
        return "refused:" + refused.reason



# ---------------------------------------------------------------------------
# Running the checks.
# The budget of one search: at most this many paths (deterministic: the same outcome
# on any machine) and at most this much CPU whatever happens. 200 paths take 6-9 s
# of CPU here; each kept check's seeded mutant is found within 135 paths (6 s).
CROSSHAIR_MAX_ITERATIONS = 200
CROSSHAIR_BUDGET_SECONDS = 20.0
_HERE = "loomcheck.symbolic.contracts"


@dataclass(frozen=True)
class Check:
    name: str
    first: str          # fully qualified names, as `crosshair diffbehavior` takes them
    second: str
    backs: tuple[str, ...]   # the catalogue entries the check backs


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: str                   # no-difference-found | exhausted | difference-found | error
    seconds: float | None         # CPU seconds of the search (process start and imports excluded)
    wall_seconds: float           # the whole process, as CI sees it
    iterations: int | None        # paths CrossHair explored
    counterexample: dict[str, str] | None = None   # args, result1, result2 (reprs) when a difference is found
    detail: str = ""


CHECKS: tuple[Check, ...] = (
    Check("scanner-cut", f"{_HERE}.scan_whole", f"{_HERE}.scan_in_two", ("scan.incremental-equals-full",)),
    Check("oracle", f"{_HERE}.reference_reading", f"{_HERE}.oracle_reading",
          ("legacy.classified", "legacy.human-park-proves-nothing", "legacy.ambiguous-refused",
           "fold.resume-payloads-ordered", "fold.null-resume-status-only")),
    Check("fold-snapshot", f"{_HERE}.fold_whole", f"{_HERE}.fold_from_snapshot", ("fold.state-is-fold-of-log",)),
    Check("canonical", f"{_HERE}.canonical_reference", f"{_HERE}.canonical_spec",
          ("approvals.digest-bytes",)),   # the text the digest hashes; depth <= 2 here, so not digest-depth
)


def run_check(check: Check, budget_seconds: float = CROSSHAIR_BUDGET_SECONDS,
              max_iterations: int = CROSSHAIR_MAX_ITERATIONS) -> CheckResult:
    """One behaviour-difference search in a fresh process (symbolic/crosshair_search.py).
    CrossHair bounds the CPU time; a wall-clock timeout kills a process that hangs
    (a loaded CI machine runs it several times slower than the CPU budget)."""
    started = time.monotonic()
    command = [sys.executable, "-m", "loomcheck.symbolic.crosshair_search", check.first, check.second,
               str(budget_seconds), str(max_iterations)]
    try:
        # A fixed hash seed fixes set and dict-of-set orders, so the search takes
        # the same paths in every run: the same outcome, the same counterexample.
        done = subprocess.run(command, capture_output=True, text=True, timeout=6 * budget_seconds + 60,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
    except subprocess.TimeoutExpired:
        return CheckResult(check.name, "error", None, round(time.monotonic() - started, 1), None,
                           detail="wall-clock timeout: the search process was killed")
    wall = round(time.monotonic() - started, 1)
    lines = done.stdout.strip().splitlines()
    try:
        outcome = json.loads(lines[-1])
    except (IndexError, ValueError):
        return CheckResult(check.name, "error", None, wall, None,
                           detail=f"exit {done.returncode}: {(done.stderr or done.stdout)[-2000:]}")
    counterexample = ({key: outcome[key] for key in ("args", "result1", "result2")}
                      if outcome["status"] == "difference-found" else None)
    return CheckResult(check.name, outcome["status"], outcome.get("seconds"), wall, outcome.get("iterations"),
                       counterexample, outcome.get("detail", ""))


def run_crosshair_checks(budget_seconds: float = CROSSHAIR_BUDGET_SECONDS,
                         checks: tuple[Check, ...] = CHECKS,
                         max_iterations: int = CROSSHAIR_MAX_ITERATIONS) -> list[CheckResult]:
    """Every check, one after the other, each bounded by `budget_seconds` of CPU
    and `max_iterations` paths."""
    return [run_check(check, budget_seconds, max_iterations) for check in checks]


if __name__ == "__main__":
    for result in run_crosshair_checks(float(sys.argv[1]) if len(sys.argv) > 1 else CROSSHAIR_BUDGET_SECONDS):
        print(json.dumps(asdict(result)))
