"""State is the fold of the log: the answers fold in order, an implementation's
state equals its own fold from nothing, and equals the reference's fold."""

from __future__ import annotations

from typing import Any, Iterator

from loomcheck.contract.session import Step, Trace
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import entries_of
from loomcheck.properties.registry import Violation, predicate

OBSERVABLE_VARIABLES = ("_input", "_resumePayloads", "_resumePayload")
# The paths provenance can trace in `observable` (the fold may hold more than it shows).
_OBSERVABLE_PATHS = ("status", "flowId", "suspendedOn", "output")
_OBSERVABLE_PREFIXES = tuple(f"variables.{v}" for v in OBSERVABLE_VARIABLES) + ("steps.", "suspendedOn.")


def observable(state: dict[str, Any]) -> dict[str, Any]:
    """The part of a folded state the spec defines (kernels may keep more; docs/driver.md, "The
    folded state"). Free, so not compared (spec/profiles.toml): the answer list and the latest
    answer absent or [] and null before the first answer (absent-or-null); a step's status name
    unless it is completed, and the output of a step that has not completed (step-status-names)."""
    variables = state.get("variables") if isinstance(state.get("variables"), dict) else {}
    steps = state.get("steps") if isinstance(state.get("steps"), dict) else {}
    shown = {k: variables[k] for k in OBSERVABLE_VARIABLES if k in variables}
    if shown.get("_resumePayloads", []) == []:
        shown.pop("_resumePayloads", None)
        if shown.get("_resumePayload", None) is None:
            shown.pop("_resumePayload", None)
    return {
        "status": state.get("status"),
        "flowId": state.get("flowId"),
        "suspendedOn": state.get("suspendedOn"),
        "output": state.get("output"),
        "variables": shown,
        "steps": {k: _step_observable(v) for k, v in steps.items() if isinstance(v, dict)},
    }


def _step_observable(frame: dict[str, Any]) -> dict[str, Any]:
    if frame.get("status") == "completed":
        return {"status": "completed", "output": frame.get("output")}
    return {"status": "not completed"}


def differing(left: dict[str, Any], right: dict[str, Any], prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted path, left value, right value) for each leaf where the two states differ."""
    found: list[tuple[str, Any, Any]] = []
    for key in sorted(set(left) | set(right)):
        path = f"{prefix}{key}"
        a, b = left.get(key, "<absent>"), right.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            found.extend(differing(a, b, path + "."))
        elif not json_equal(a, b):
            found.append((path, a, b))
    return found


def differences(left: dict[str, Any], right: dict[str, Any], prefix: str = "") -> list[str]:
    return [f"{path}: {show(a, 50)} vs {show(b, 50)}" for path, a, b in differing(left, right, prefix)]


def _at(state: dict[str, Any], path: str) -> Any:
    value: Any = state
    for key in path.split("."):
        value = value.get(key, "<absent>") if isinstance(value, dict) else "<absent>"
    return value


def provenance(log: list[dict[str, Any]], snapshot: dict[str, Any] | None,
               paths: list[tuple[str, Any, Any]]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """For each differing path, the last event of the log that changed it in the reference's fold
    (the event whose folding wrote the value the state read disagrees with), with its role.
    Folds every prefix of the log: run only once a check has failed."""
    from loomcheck.reference.driver import fold_json

    folds = [observable(fold_json(log[:k], snapshot)) for k in range(len(log) + 1)]
    events: list[int] = []
    roles: list[str] = []
    for path, read, folded in paths[:3]:
        writer = next((k for k in range(len(log), 0, -1)
                       if not json_equal(_at(folds[k], path), _at(folds[k - 1], path))), None)
        seq = log[writer - 1].get("seq") if writer is not None else None
        if type(seq) is int and seq not in events:
            events.append(seq)
            roles.append(f"the last event that changes {path} in the fold of the log (to "
                         f"{show(_at(folds[writer], path), 40)}); the state read has {show(read, 40)}")
    return tuple(events), tuple(roles)


@predicate("fold.resume-payloads-ordered", on_load=True)
def answers_fold_in_order(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.state_after is None:
        return
    entries = entries_of(step.log_after, trace.snapshots.get(step.execution or ""))
    variables = step.state_after.get("variables") or {}
    folded = variables.get("_resumePayloads", [] if not entries else None)
    expected = [e.payload for e in entries]
    if not isinstance(folded, list) or not json_equal(folded, expected):
        yield Violation("fold.resume-payloads-ordered",
                        f"_resumePayloads is {show(folded)}, but the log's answers in order are {show(expected)} "
                        f"(from {', '.join('#' + str(e.seq) for e in entries if e.seq) or 'no event'}).",
                        tuple(e.seq for e in entries if e.seq))
    elif entries and entries[-1].seq is not None and not json_equal(variables.get("_resumePayload"), entries[-1].payload):
        yield Violation("fold.resume-payloads-ordered",
                        f"_resumePayload is {show(variables.get('_resumePayload'))}, but the latest answer is "
                        f"{show(entries[-1].payload)} (#{entries[-1].seq}).", (entries[-1].seq,))


@predicate("fold.state-is-fold-of-log", on_load=True)
def state_is_own_fold(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.state_after is None or step.folded_after is None:
        return
    diff = differing(step.state_after, step.folded_after)
    if diff:
        events, roles = provenance(step.log_after, trace.snapshots.get(step.execution or ""),
                                   [d for d in diff if d[0] in _OBSERVABLE_PATHS or d[0].startswith(_OBSERVABLE_PREFIXES)])
        yield Violation("fold.state-is-fold-of-log",
                        f"the state read from the implementation differs from its own fold of the same {len(step.log_after)} "
                        f"events: {'; '.join(differences(step.state_after, step.folded_after)[:3])}.", events, roles,
                        "the state an implementation reports is the fold of its own log, from nothing (ADR 0056 D2)")


@predicate("fold.matches-reference", on_load=True)
def state_matches_reference(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.state_after is None:
        return
    from loomcheck.reference.driver import fold_json  # the point of a differential check

    reference = fold_json(step.log_after, trace.snapshots.get(step.execution or ""))
    diff = differing(observable(step.state_after), observable(reference))
    if diff:
        events, roles = provenance(step.log_after, trace.snapshots.get(step.execution or ""), diff)
        yield Violation("fold.matches-reference",
                        f"implementation state vs the reference fold of its log: "
                        f"{'; '.join(f'{p}: {show(a, 50)} vs {show(b, 50)}' for p, a, b in diff[:3])}.", events, roles,
                        "the state equals the reference kernel's fold of the same log")
