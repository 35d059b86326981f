"""ADR 0056 and the code versions it builds on: executions are pinned to their
code; resumeAs may transform the folded input, whose outcome is recorded and
folded, never re-run; a failing transform appends nothing.

The built-in transforms (spec/transforms.py) are computed here a second time,
from the spec's table, so the predicates do not trust the kernel's registry;
which transformStates fit the registry at all is the spec's own check."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterator

from loomcheck.contract.script import AdvanceClock, Load, Recover, RecoverAbandoned, Resume, ResumeAs, Start
from loomcheck.contract.session import Step, Trace
from loomcheck.properties.steps import fresh, logs_touched
from loomcheck.contract.jsonvalues import json_equal, show
from loomcheck.contract.logview import BINDING_REFUSALS, code_changed, flow_id_of
from loomcheck.properties.registry import Violation, predicate
from loomcheck.spec.names import INPUT_EVENT
from loomcheck.spec.parsing import Invalid, parse
from loomcheck.spec.programs import FlowProgram, InputOp
from loomcheck.spec.transforms import argument_problem
from loomcheck.spec.versions import pinned_version

JSON = Any
# Refusals a resume may meet before its code is looked at (the ingress gate, the binding, identity).
EARLIER_THAN_CODE = ("unknown-execution", "kernel-namespace", "not-suspended", "gate-mismatch", "terminal",
                     "unknown-flow") + BINDING_REFUSALS


# -- the log, read for migration ----------------------------------------------------
def folded_input(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None) -> JSON:
    """The _input a fold of this log gives (ADR 0056 D2): the latest migratedInput,
    else the start's input, else the snapshot's."""
    value = ((snapshot or {}).get("variables") or {}).get("_input")
    for event in log:
        payload = event.get("payload")
        if not isinstance(payload, dict):
            continue
        if event.get("type") == "EXECUTION_STARTED":
            value = payload.get("input")
        elif event.get("type") == "EXECUTION_MIGRATED" and "migratedInput" in payload:
            value = payload["migratedInput"]
    return value


def migrations(log: list[dict[str, JSON]]) -> list[dict[str, JSON]]:
    return [e for e in log if e.get("type") == "EXECUTION_MIGRATED"]


def stamped(event: dict[str, JSON]) -> bool:
    """An EXECUTION_MIGRATED that migrated state (1.15.0)."""
    payload = event.get("payload")
    return isinstance(payload, dict) and "migratedInput" in payload


def input_facts(events: list[dict[str, JSON]]) -> list[dict[str, JSON]]:
    return [e for e in events if e.get("type") == INPUT_EVENT and isinstance(e.get("payload"), dict)]


def transform_of(op: Any) -> JSON:
    options = getattr(op, "options", None) or {}
    return options.get("transformState")


# -- the built-in transforms, computed independently ---------------------------------
@dataclass(frozen=True)
class Outcome:
    value: JSON = None
    refusal: str | None = None   # the StateMigrationError reason a kernel must refuse with


def expected_outcome(spec: JSON, value: JSON, target: FlowProgram | None) -> Outcome:
    """What a conforming registry makes of a transformState on the folded input."""
    if argument_problem(spec) is not None:
        return Outcome(refusal="unknown-transform")
    name = spec["name"]
    if name == "fail":
        return Outcome(refusal="transform-failed")
    if name == "nothing":
        return Outcome(refusal="transform-returned-nothing")
    if name == "wrap":
        return Outcome({spec["key"]: copy.deepcopy(value)})
    if name == "parse":
        schema = target.inputSchema if target is not None else None
        parsed = parse(schema, value) if isinstance(schema, dict) else None
        return Outcome(refusal="transform-failed") if parsed is None or isinstance(parsed, Invalid) \
            else Outcome(parsed.value)
    if not isinstance(value, dict):
        return Outcome(refusal="transform-failed")  # rename and default take an object
    result = copy.deepcopy(value)
    if name == "rename" and spec["from"] in result:
        moved = result.pop(spec["from"])
        result[spec["to"]] = moved
    elif name == "default" and spec["field"] not in result:
        result[spec["field"]] = copy.deepcopy(spec.get("value"))
    return Outcome(result)


def _before(step: Step, trace: Trace) -> tuple[list[dict[str, JSON]], dict[str, JSON] | None]:
    return step.log_before, trace.snapshots.get(step.execution or "")


def _migration_due(step: Step, trace: Trace) -> tuple[Outcome, FlowProgram | None] | None:
    """For a resumeAs onto an execution that exists: what its transform makes of the folded input."""
    if not isinstance(step.op, ResumeAs) or not (step.log_before or step.execution in trace.snapshots):
        return None
    target = trace.flows.get(step.op.flow)
    current = folded_input(*_before(step, trace))
    spec = transform_of(step.op)
    return (expected_outcome(spec, current, target) if spec is not None else Outcome(current)), target


# -- K11: code versions ---------------------------------------------------------------
@predicate("version.recorded")
def versions_are_recorded(step: Step, trace: Trace) -> Iterator[Violation]:
    if not step.outcome.ok or not isinstance(step.op, (Start, ResumeAs)):
        return
    added = fresh(step)
    if isinstance(step.op, Start):
        want = trace.registered.get(step.op.flow)
        first = added[0] if added else {}
        got = (first.get("payload") or {}).get("version") if isinstance(first.get("payload"), dict) else None
        if want is not None and got != want:
            yield Violation("version.recorded",
                            f"{step.op.flow!r} is deployed as {want}; EXECUTION_STARTED #{first.get('seq')} recorded "
                            f"version {show(got, 80)} (the code version is c1: + SHA-256 of the program's canonical JSON).",
                            (first.get("seq"),) if first else ())
        return
    record = next((e for e in added if e.get("type") == "EXECUTION_MIGRATED"), None)
    payload = record.get("payload") if record and isinstance(record.get("payload"), dict) else None
    if payload is None:
        return  # resumeas.recording-table judges a missing EXECUTION_MIGRATED
    pinned = pinned_version(*_before(step, trace))
    for key, want in (("fromVersion", pinned), ("toVersion", trace.registered.get(step.op.flow))):
        if want is not None and payload.get(key) != want:
            yield Violation("version.recorded",
                            f"EXECUTION_MIGRATED #{record['seq']} records {key} {show(payload.get(key), 80)}, but it must be "
                            f"{want} ({'the version the execution was pinned to' if key == 'fromVersion' else 'the target flow as deployed now'}).",
                            (record["seq"],))


@predicate("version.resume-as-exits")
def resume_as_is_the_exit(step: Step, trace: Trace) -> Iterator[Violation]:
    if isinstance(step.op, ResumeAs) and step.outcome.reason == "code-mismatch":
        yield Violation("version.resume-as-exits",
                        f"resumeAs onto {step.op.flow!r} was refused code-mismatch: resumeAs onto the registered "
                        f"version is the exit from changed code, never refused for it.",
                        tuple(e["seq"] for e in step.log_before[-1:]),
                        ("the execution as the refused resumeAs found it",),
                        "the resumeAs runs the execution on the target's registered code (ADR 0104 Context)")


@predicate("version.pinned")
def changed_code_refuses(step: Step, trace: Trace) -> Iterator[Violation]:
    op = step.op
    if not isinstance(op, (Resume, Recover)) or not (step.log_before or step.execution in trace.snapshots):
        return
    changed = code_changed(trace.registered, *_before(step, trace))
    flow = flow_id_of(*_before(step, trace))
    if changed and step.outcome.ok:
        added = fresh(step)
        yield Violation("version.pinned",
                        f"{step.execution} is pinned to {pinned_version(*_before(step, trace))}, but {flow!r} is now "
                        f"deployed as {trace.registered.get(flow or '')}; the {op.op} was accepted and ran it on code it "
                        f"did not start on, not refused code-mismatch.", tuple(e.get("seq") for e in added[:3]))
    elif changed and step.outcome.reason not in EARLIER_THAN_CODE + ("code-mismatch",):
        yield Violation("version.pinned",
                        f"the {op.op} of {step.execution}, whose flow {flow!r} was redeployed, was refused "
                        f"{step.outcome.reason}, not code-mismatch: the new code's contract was applied to an execution "
                        f"pinned to the old one.")
    elif not changed and step.outcome.reason == "code-mismatch":
        yield Violation("version.pinned",
                        f"the {op.op} of {step.execution} was refused code-mismatch, but it is pinned to "
                        f"{pinned_version(*_before(step, trace))}, which is the version deployed for {flow!r}.")


# -- ADR 0056 D1, D3: the transform ------------------------------------------------------
@predicate("migration.outcome-recorded")
def outcome_is_recorded(step: Step, trace: Trace) -> Iterator[Violation]:
    due = _migration_due(step, trace)
    if due is None or not step.outcome.ok or due[0].refusal is not None:
        return
    record = next((e for e in fresh(step) if e.get("type") == "EXECUTION_MIGRATED"), None)
    payload = record.get("payload") if record and isinstance(record.get("payload"), dict) else None
    if payload is None:
        return  # resumeas.recording-table judges a missing EXECUTION_MIGRATED
    spec = transform_of(step.op)
    current = folded_input(*_before(step, trace))
    if spec is None and "migratedInput" in payload:
        yield Violation("migration.outcome-recorded",
                        f"resumeAs without a transformState recorded migratedInput {show(payload['migratedInput'], 50)} "
                        f"on #{record['seq']}: no transform must be byte-identical to a migration without state change "
                        f"(ADR 0056 D3).", (record["seq"],))
    elif spec is not None and ("migratedInput" not in payload or not json_equal(payload["migratedInput"], due[0].value)):
        got = show(payload["migratedInput"], 50) if "migratedInput" in payload else "no migratedInput"
        yield Violation("migration.outcome-recorded",
                        f"the transform {show(spec, 60)} on the folded _input {show(current, 50)} gives "
                        f"{show(due[0].value, 50)}, but EXECUTION_MIGRATED #{record['seq']} recorded {got} (ADR 0056 D1: "
                        f"the outcome on the FOLDED input is durable).", (record["seq"],))


@predicate("migration.failed-transform-refused")
def failing_transforms_refuse(step: Step, trace: Trace) -> Iterator[Violation]:
    due = _migration_due(step, trace)
    if due is None or due[0].refusal is None:
        return
    spec = transform_of(step.op)
    added = fresh(step)
    if step.outcome.ok:
        yield Violation("migration.failed-transform-refused",
                        f"the transform {show(spec, 60)} must refuse ({due[0].refusal}) on the folded _input "
                        f"{show(folded_input(*_before(step, trace)), 40)}, yet the resumeAs was accepted.",
                        tuple(e.get("seq") for e in added[:3]))
    elif added:
        yield Violation("migration.failed-transform-refused",
                        f"the resumeAs was refused {step.outcome.reason}, but #{added[0].get('seq')} {added[0].get('type')} "
                        f"was appended: a failing transform leaves the execution untouched (ADR 0056 D3).",
                        tuple(e.get("seq") for e in added[:3]))
    elif step.outcome.error == "StateMigrationError" and step.outcome.reason != due[0].refusal:
        yield Violation("migration.failed-transform-refused",
                        f"the transform {show(spec, 60)} is refused {due[0].refusal}, not {step.outcome.reason}.")


@predicate("migration.target-input-contract")
def target_contract_holds(step: Step, trace: Trace) -> Iterator[Violation]:
    due = _migration_due(step, trace)
    if due is None or due[0].refusal is not None:
        return
    outcome, target = due
    if target is None or not target.validateInput or target.inputSchema is None:
        if step.outcome.reason == "input-contract":
            yield Violation("migration.target-input-contract",
                            f"resumeAs onto {step.op.flow!r}, which does not validate its input, was refused input-contract.")
        return
    parsed = parse(target.inputSchema, outcome.value)
    if isinstance(parsed, Invalid) and step.outcome.ok:
        yield Violation("migration.target-input-contract",
                        f"{step.op.flow!r} validates its input and rejects {show(outcome.value, 50)} ({parsed.field}: "
                        f"{parsed.message}), yet the resumeAs was accepted: the new runner was handed old-shaped input.",
                        tuple(e.get("seq") for e in fresh(step)[:3]))
    elif not isinstance(parsed, Invalid) and step.outcome.reason == "input-contract":
        yield Violation("migration.target-input-contract",
                        f"{show(outcome.value, 50)} matches {step.op.flow!r}'s inputSchema, yet the resumeAs was "
                        f"refused input-contract.")


# -- ADR 0056 D2: the fold, and what runs are handed -------------------------------------
@predicate("migration.fold-replaces-input", on_load=True)
def fold_replaces_input(step: Step, trace: Trace) -> Iterator[Violation]:
    if step.state_after is None or step.execution is None:
        return
    snapshot = trace.snapshots.get(step.execution)
    moves = migrations(step.log_after)
    if not moves:
        return
    variables = step.state_after.get("variables") if isinstance(step.state_after.get("variables"), dict) else {}
    want = folded_input(step.log_after, snapshot)
    if not json_equal(variables.get("_input"), want):
        source = next((e for e in reversed(moves) if stamped(e)), None)
        yield Violation("migration.fold-replaces-input",
                        f"the state's _input is {show(variables.get('_input'), 50)}, but the log folds it to "
                        f"{show(want, 50)}" + (f" (migratedInput of #{source['seq']})" if source else "") + ".",
                        (source["seq"],) if source else ())
        return
    audit = variables.get("_migrations")
    newest = moves[-1]
    migrated_state = stamped(newest)
    entry = audit[-1] if isinstance(audit, list) and audit and isinstance(audit[-1], dict) else None
    if entry is None or (entry.get("stateMigrated") is True) != migrated_state:
        yield Violation("migration.fold-replaces-input",
                        f"the newest _migrations entry is {show(entry, 60)}; EXECUTION_MIGRATED #{newest['seq']} "
                        f"{'carries' if migrated_state else 'carries no'} migratedInput, so it "
                        f"{'must' if migrated_state else 'must not'} carry stateMigrated: true.", (newest["seq"],))


def _driven(step: Step) -> list[tuple[str, list[dict[str, JSON]], list[dict[str, JSON]]]]:
    """(execution, before, after) for every execution this operation ran the flow of."""
    if isinstance(step.op, (AdvanceClock, RecoverAbandoned)):
        woken = set(step.recovered or [])
        return [t for t in logs_touched(step) if t[0] in woken]
    if isinstance(step.op, (Start, Resume, ResumeAs, Recover)) and step.outcome.ok:
        return logs_touched(step)
    return []


def _run_violations(step: Step, trace: Trace, invariant: str, since_migration: bool) -> Iterator[Violation]:
    for execution, before, after in _driven(step):
        snapshot = trace.snapshots.get(execution)
        if since_migration and not any(stamped(e) for e in migrations(before)):
            continue  # never-reruns judges the runs after the migration's own
        want = folded_input(after, snapshot)
        for fact in input_facts(after[len(before):]):
            got = fact["payload"].get("value")
            if not json_equal(got, want):
                started = next((e for e in after if e.get("type") == "EXECUTION_STARTED"), None)
                raw = started is not None and json_equal(got, (started.get("payload") or {}).get("input"))
                yield Violation(invariant, f"the run of {execution} was handed {show(got, 50)} (#{fact['seq']}), but the "
                                           f"folded _input is {show(want, 50)}" +
                                ("; that is the raw EXECUTION_STARTED input" if raw else "") + " (ADR 0056 D2).",
                                (fact["seq"],))
                return
        program = trace.flow_of(after, execution)
        first = program.body[0] if program is not None and program.body else None
        if isinstance(first, InputOp) and not any(json_equal(f["payload"].get("value"), want) for f in input_facts(after)):
            handed = input_facts(after[len(before):]) or input_facts(after)[-1:]
            yield Violation(invariant, f"{execution} ran a flow whose first op records its input, and no "
                                       f"{INPUT_EVENT} fact holds the folded _input {show(want, 50)}: the run was handed "
                                       f"something else" + (f" ({show(handed[-1]['payload'].get('value'), 40)}, a fact "
                                                            f"already in the log)" if handed else "") + ".",
                            tuple(f["seq"] for f in handed[-1:]))


@predicate("migration.runs-read-fold")
def runs_read_the_fold(step: Step, trace: Trace) -> Iterator[Violation]:
    yield from _run_violations(step, trace, "migration.runs-read-fold", since_migration=False)


@predicate("migration.never-reruns")
def replay_never_reruns(step: Step, trace: Trace) -> Iterator[Violation]:
    yield from _run_violations(step, trace, "migration.never-reruns", since_migration=True)
    if isinstance(step.op, (ResumeAs, Load)) or step.state_after is None or step.execution is None:
        return
    before = [e for e in migrations(step.log_before) if stamped(e)]
    if not before:
        return
    recorded = folded_input(step.log_after, trace.snapshots.get(step.execution))
    variables = step.state_after.get("variables") if isinstance(step.state_after.get("variables"), dict) else {}
    if not json_equal(variables.get("_input"), recorded):
        yield Violation("migration.never-reruns",
                        f"after {step.op.op}, {step.execution}'s _input reads {show(variables.get('_input'), 50)}, but the "
                        f"recorded migratedInput (#{before[-1]['seq']}) is {show(recorded, 50)}: replay must fold the "
                        f"outcome, never apply the transform again.", (before[-1]["seq"],))
