"""Refuse before append, typed refusals, and the resume ingress gate
(ADR 0104 D1 and D4; ADR 0077 D3)."""

from __future__ import annotations

from typing import Iterator

from loomcheck.contract.script import Define, Resume
from loomcheck.contract.session import Step, Trace
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import (BINDING_REFUSALS, IN_DOUBT, TERMINAL, answers_gate, code_changed, final_moment,
                                         without_grant)
from loomcheck.properties.explain import describe, refusal_argument
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.profiles import admissible_reasons
from loomcheck.spec.vocabulary import kernel_event_types, refusals


def _before(step: Step, trace: Trace):
    return final_moment(step.log_before, trace.snapshots.get(step.execution or ""))


def _exists(step: Step, trace: Trace) -> bool:
    return bool(step.log_before) or (step.execution or "") in trace.snapshots


def _appended(step: Step) -> list[int]:
    return [e.get("seq") for e in step.log_after[len(step.log_before):]]


def _argument(step: Step, trace: Trace, should: str) -> dict:
    """The execution's last event before the operation and the state it left, what the
    operation appended, and the refusal the decision requires."""
    last = (step.log_before[-1].get("seq"), f"the last event before the {step.op.op}, after which the execution "
                                           f"was {describe(_before(step, trace))}") if step.log_before else None
    return refusal_argument(step.op.op, last, _appended(step), should)


@predicate("refusal.append-nothing")
def refusal_appends_nothing(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.outcome.ok or isinstance(step.op, Define):
        return
    if step.log_after != step.log_before:
        added = step.log_after[len(step.log_before):] if step.log_after[:len(step.log_before)] == step.log_before else step.log_after
        cited = ", ".join(f"#{e.get('seq')} {e.get('type')}" for e in added[:4])
        yield Violation("refusal.append-nothing",
                        f"{step.op.op} was refused ({step.outcome.reason}) but the log changed: {cited or 'events removed'}.",
                        tuple(e.get("seq") for e in added[:4]),
                        tuple("appended although the operation was refused" for _ in added[:4]),
                        "a refusal is data: a typed error with a reason, and the log exactly as it was")


@predicate("refusal.typed-reason")
def refusal_is_typed(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.outcome.ok:
        return
    known = {r.reason: r.error for r in refusals().refusal}
    reason, error = step.outcome.reason, step.outcome.error
    scene = _scene(step, trace)
    if reason not in known:
        yield Violation("refusal.typed-reason", f"{step.op.op} was refused with reason {reason!r}, which is not a catalogued refusal reason.",
                        *scene, "a reason from spec/refusals.toml, whose error type the catalogue names")
    elif error != known[reason]:
        yield Violation("refusal.typed-reason", f"{step.op.op} was refused {reason!r} as {error!r}; the catalogue types that reason as {known[reason]!r}.",
                        *scene, f"{known[reason]} {reason} (spec/refusals.toml)")


def _scene(step: Step, trace: Trace) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The event the refusal was judged against: the execution's last before the operation."""
    if not step.log_before or type(step.log_before[-1].get("seq")) is not int:
        return (), ()
    return ((step.log_before[-1]["seq"],),
            (f"the last event before the refused {step.op.op}; the execution was {describe(_before(step, trace))}",))


@predicate("resume.kernel-namespace")
def kernel_types_are_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Resume) or step.op.type not in kernel_event_types():
        return
    if not _exists(step, trace) and step.outcome.reason == "unknown-execution":
        return  # which of the two comes first for an execution that does not exist is not specified
    if step.outcome.reason != "kernel-namespace":
        yield Violation("resume.kernel-namespace",
                        f"a caller resumed with the kernel event type {step.op.type!r} and got {step.outcome.short()}, "
                        f"not refused kernel-namespace.",
                        **_argument(step, trace, f"ResumeRefusedError kernel-namespace: {step.op.type} is the kernel's own event type"))


@predicate("resume.not-suspended")
def unparked_resumes_are_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    if not _exists(step, trace):
        return
    before = _before(step, trace)
    if isinstance(step.op, Resume) and step.op.type not in kernel_event_types() and before.status != "suspended":
        # A finished execution may be refused terminal as well (spec/profiles.toml, resume-finished-reason).
        situation = "terminal" if before.status in TERMINAL else None
        if step.outcome.reason not in admissible_reasons("resume", "not-suspended", situation):
            yield Violation("resume.not-suspended",
                            f"resume {step.op.type!r} arrived while the execution was {before.status} (not parked) "
                            f"and got {step.outcome.short()}, not refused not-suspended.",
                            **_argument(step, trace, f"ResumeRefusedError not-suspended: the execution is {before.status}, "
                                              f"parked at no gate"))


@predicate("resume.gate-mismatch")
def other_gates_are_refused(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Resume) or step.op.type in kernel_event_types() or not _exists(step, trace):
        return
    before = _before(step, trace)
    if before.status == "suspended" and not answers_gate(before, step.op.type) and step.outcome.reason != "gate-mismatch":
        yield Violation("resume.gate-mismatch",
                        f"resume {step.op.type!r} reached an execution parked on {before.parked_on!r} and got "
                        f"{step.outcome.short()}, not refused gate-mismatch.",
                        **_argument(step, trace, f"ResumeRefusedError gate-mismatch: only a resume naming {before.parked_on!r} "
                                          f"answers it"))


@predicate("resume.accepted-records-answer")
def parked_gate_answers_are_recorded(step: Step, trace: Trace) -> Iterator[Violation]:
    if not isinstance(step.op, Resume) or step.op.type in kernel_event_types() or not _exists(step, trace):
        return
    before = _before(step, trace)
    if not answers_gate(before, step.op.type) or before.parked_on == IN_DOUBT:
        return  # an in-doubt park takes a verdict: indoubt.* check those
    if code_changed(trace.registered, step.log_before, trace.snapshots.get(step.op.execution)):
        return  # its code was redeployed: version.pinned judges the refusal
    if not step.outcome.ok:
        # A declared shape may refuse it (typed.* judge that), and so may the binding (approvals.*).
        if step.outcome.reason not in ("invalid-payload",) + BINDING_REFUSALS:
            yield Violation("resume.accepted-records-answer",
                            f"resume {step.op.type!r} named the gate the execution is parked on and was refused "
                            f"({step.outcome.reason}: {step.outcome.message}).")
        return
    from loomcheck.properties.typed import answer_to_record

    answer = answer_to_record(step, trace)
    added = without_grant(step.log_after[len(step.log_before):])
    expected = [(step.op.type, answer), ("EXECUTION_RESUMED", answer)]
    got = [(e.get("type"), e.get("payload")) for e in added[:2]]
    if len(got) < 2 or any(g[0] != x[0] or not json_equal(g[1], x[1]) for g, x in zip(got, expected)):
        shown = ", ".join(f"#{e.get('seq')} {e.get('type')} {show(e.get('payload'), 40)}" for e in added[:2]) or "nothing"
        yield Violation("resume.accepted-records-answer",
                        f"the answer {show(answer)} to {step.op.type!r} should be recorded as {step.op.type} then "
                        f"EXECUTION_RESUMED with that payload; the log recorded {shown}.",
                        tuple(e.get("seq") for e in added[:2]))
