"""Seeded mutants for the CrossHair checks (symbolic/contracts.py): each is a
realistic bug in one of the pure functions, with the same signature as the entry
point it replaces, so `crosshair diffbehavior` can be pointed at it by name
(`loomcheck.tests.symbolic_mutants.<name>`). A kept check must find its mutant
(tests/test_symbolic_contracts.py).

The last four canonical mutants (upper-case hex escapes, an exponent without "+",
code-point name order, shortest digits by rounding alone) are NOT found by the
canonical check within 35 s of CrossHair: they are kept so that claim can be
re-run (`python -m loomcheck.symbolic.crosshair_search
loomcheck.symbolic.canonical_reading.canonical_spec loomcheck.tests.symbolic_mutants.<name> 30 2000`),
not tested. Hypothesis and the published vectors find them."""

from __future__ import annotations

import copy
import types
from typing import Any, Callable

from loomcheck.properties.stray_oracle import JSON
from loomcheck.reference.fold import HANDLERS, State, answers_no_suspend_point, fold
from loomcheck.reference.scanner import StrayScanner, scan
from loomcheck.spec import canonical
from loomcheck.symbolic.canonical_reading import JsonLike, as_doubles
from loomcheck.symbolic.log_pairs import LogCode, answers_of, cut_at, decode_log, in_two_at_every_cut, kinds, verdict_tuple


# -- scanner-cut: R1a broken ----------------------------------------------------------
class ForgetfulScanner(StrayScanner):
    """Keeps "the previous event" per feed call, not in the scanner: the first event
    of a piece no longer sees the EXECUTION_RECOVERED or STEP_STARTED before the cut."""

    def feed(self, events, kinds) -> None:  # type: ignore[no-untyped-def]
        self.previous_type, self.previous_step = None, None
        super().feed(events, kinds)


def scan_in_two_forgetful(log: LogCode) -> tuple[object, ...]:
    return in_two_at_every_cut(ForgetfulScanner, decode_log(log))


# -- oracle: a human park taken as proof (as tests/mutants/human_park_as_proof.py) ------
class ProvingScanner(StrayScanner):
    def _suspended(self, condition, seq, kinds) -> None:  # type: ignore[no-untyped-def]
        super()._suspended(condition, seq, kinds)
        if self.park == "human":
            self.last_gate_park = seq  # ADR 0104 D2: "a human park proves nothing"


def reading_proving(log: LogCode) -> tuple[object, ...]:
    events = decode_log(log)
    scanner = ProvingScanner(consumed=0)
    scanner.feed(events, kinds)
    return verdict_tuple(scanner.verdict()) + answers_of(fold(events))


# -- oracle: the resume handler overwrites the answer list instead of appending ---------
def _resumed_overwriting(state: State, payload: JSON) -> None:
    status_only = answers_no_suspend_point(state, payload)
    state.status, state.suspended_on = "running", None
    if not status_only:
        state.variables["_resumePayloads"] = [copy.deepcopy(payload)]  # ADR 0057: append, never replace
        state.variables["_resumePayload"] = copy.deepcopy(payload)


OVERWRITING = {**HANDLERS, "EXECUTION_RESUMED": _resumed_overwriting}


def reading_overwriting(log: LogCode) -> tuple[object, ...]:
    events = decode_log(log)
    return verdict_tuple(scan(events, None, kinds)) + answers_of(fold(events, handlers=OVERWRITING))


# -- fold-snapshot: a snapshot reader that does not restore the park -----------------------
def fold_from_lossy_snapshot(log: LogCode, cut: int) -> dict[str, object]:
    events, at = decode_log(log), cut_at(log, cut)
    snapshot = State.from_json(fold(events[:at]).to_json())
    snapshot.suspended_on = None  # "the park is in the log anyway": not once retention dropped the prefix
    return fold(events[at:], snapshot).to_json()


# -- canonical: the reference with one helper replaced ------------------------------
def _rebound(module: types.ModuleType, **overrides: Callable[..., Any]) -> Callable[[object], str]:
    """The module's canonical_json with `overrides` in place of its helpers: every
    function is re-created over one shared copy of the globals, so the helpers
    call each other's replacements and the real module is untouched."""
    namespace: dict[str, Any] = dict(vars(module))
    for name, value in vars(module).items():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            namespace[name] = types.FunctionType(value.__code__, namespace, name, value.__defaults__, value.__closure__)
    namespace.update(overrides)
    return namespace["canonical_json"]


def _refused_or(canonicaliser: Callable[[object], str], value: JsonLike) -> str:
    try:
        return canonicaliser(as_doubles(value))
    except canonical.CanonicalError as refused:
        return "refused:" + refused.reason


def _object_insertion_order(node, path, level):  # type: ignore[no-untyped-def]
    pieces = []
    for index, (key, child) in enumerate(node.items()):
        if not isinstance(key, str):
            raise canonical.CanonicalError("not-json", "", "name")
        pieces.append(("{" if index == 0 else ",") + canonical._quote(key) + ":")
        pieces.append((child, (path, key), level))
    return pieces + ["}"] if pieces else ["{}"]


def _integer_off_by_one(number: int, path):  # type: ignore[no-untyped-def]
    if -2**53 <= number <= 2**53:  # ±2**53 accepted: its neighbour 2**53 + 1 has the same double
        return str(number)
    raise canonical.CanonicalError("integer-range", "", "range")


_DEL_ESCAPES = {**canonical._ESCAPES, 0x7F: "\\u007f"}   # JSON.stringify writes DEL as itself
_unsorted = _rebound(canonical, _object=_object_insertion_order)
_escapes_del = _rebound(canonical, _quote=lambda text: '"' + text.translate(_DEL_ESCAPES) + '"')
_wide_int = _rebound(canonical, _integer=_integer_off_by_one)


def canonical_unsorted(value: JsonLike) -> str:
    return _refused_or(_unsorted, value)


def canonical_escapes_del(value: JsonLike) -> str:
    return _refused_or(_escapes_del, value)


def canonical_wide_int(value: JsonLike) -> str:
    return _refused_or(_wide_int, value)


# -- canonical mutants CrossHair does not find (see the module docstring) -------------------
_UPPER_ESCAPES = {**canonical._ESCAPES, **{code: f"\\u{code:04X}" for code in range(0x20)
                                            if canonical._ESCAPES[code].startswith("\\u")}}


def _layout_without_plus(digits: str, n: int) -> str:
    return canonical._layout(digits, n).replace("e+", "e")  # Python's spelling: 1e21, not 1e+21


def _object_code_point_order(node, path, level):  # type: ignore[no-untyped-def]
    return _object_insertion_order(dict(sorted(node.items())), path, level)  # Python's order, not UTF-16's


def _shortest_by_rounding(number: float) -> tuple[str, int]:
    """The first precision whose correctly rounded %e form reads back: wrong at a
    tie next to a power of two (2**-24 gives ...062, which reads back as another double)."""
    for precision in range(1, 18):
        mantissa, exponent = f"{number:.{precision - 1}e}".split("e")
        if float(f"{mantissa}e{exponent}") == number:
            return mantissa.replace(".", "").rstrip("0"), int(exponent) + 1
    return repr(number), 0


_upper_hex = _rebound(canonical, _quote=lambda text: '"' + text.translate(_UPPER_ESCAPES) + '"')
_no_plus = _rebound(canonical, _layout=_layout_without_plus)
_code_points = _rebound(canonical, _object=_object_code_point_order)
_tie_rounding = _rebound(canonical, _shortest=_shortest_by_rounding)


def canonical_upper_hex(value: JsonLike) -> str:
    return _refused_or(_upper_hex, value)


def canonical_no_plus(value: JsonLike) -> str:
    return _refused_or(_no_plus, value)


def canonical_code_point_order(value: JsonLike) -> str:
    return _refused_or(_code_points, value)


def canonical_tie_rounding(value: JsonLike) -> str:
    return _refused_or(_tie_rounding, value)
