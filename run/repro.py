"""Reproducers: a counterexample turned into something a kernel's maintainers run without
loomcheck's harness, that says what the decision expects and what their kernel did: `repro.py`
in process, or the exact stdio exchange and `repro.sh` (docs/cli.md#reproducers)."""

from __future__ import annotations

import keyword
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loomcheck.run.replay import (ReplayResult, compare, difference_violation, run_on_reference,
                                      run_operations, view_digests)
from loomcheck.contract.script import (AdvanceClock, Configure, Define, Load, Operation, Recover,
                                      RecoverAbandoned, Restart, Resume, ResumeAs, Start, describe, from_model)
from loomcheck.contract.session import Session, hello_of
from loomcheck.contract.sourcetext import escaped
from loomcheck.properties.explain import Explanation
from loomcheck.run.applicability import not_applicable_because
from loomcheck.run.manifest import shipped_manifest
from loomcheck.spec.catalogue import load_catalogue
from loomcheck.spec.regressions import RegressionLog

JSON = Any


@dataclass(frozen=True)
class Finding:
    """What the reproducer is built from: the failure as it happens on the implementation now."""

    explanation: Explanation | None
    outcomes: list[str]
    reference_outcomes: list[str]
    executions: list[str]
    logs: dict[str, list[dict[str, JSON]]] | None   # None: not known (the implementation raised)
    failure: str = ""   # how the implementation failed, when it raised


class ReproError(Exception):
    """The reproducer cannot be written (the message says why)."""


def write_repro(log: RegressionLog, impl: str, out: Path) -> list[Path]:
    """Run the counterexample on `impl`, then write its reproducer into `out`; the files written."""
    from loomcheck.run.loading import killable, needs_a_process, resolve_factory

    operations = [from_model(m) for m in log.operations]
    stdio = impl.startswith("stdio:") or needs_a_process(operations)
    driver = killable(impl) if stdio else resolve_factory(impl)()
    if stdio:
        driver.transcript = []
    try:
        hello = hello_of(driver)
        result = run_operations(Session(driver, frozenset(hello.features)), operations, applicable(impl, hello))
    finally:
        driver.close()
    translation = None if stdio else getattr(driver, "translation", lambda: None)()
    outcomes = list(result.outcomes)
    if result.failure is not None and not stdio:
        if translation is None:
            raise ReproError(f"the implementation failed while replaying: {result.failure}")
        outcomes.append(raised_label(result.failure.detail))  # a peer's exception is its finding
    # A run that raised is explained by the exception, not by a check it cut short; its logs
    # were not read to the end.
    finding = Finding(None if result.failure else _explanation(result, log, "code-versions" in hello.features), outcomes,
                      run_on_reference(operations).outcomes, list(result.logs),
                      None if result.failure else result.logs, str(result.failure) if result.failure else "")
    out.mkdir(parents=True, exist_ok=True)
    if stdio:
        return _write_exchange(driver, log, finding, out)
    path = out / "repro.py"
    text = (peer_script(translation, log, operations, finding) if translation is not None
            else python_script(log, impl, operations, finding))
    path.write_text(text, encoding="utf-8")
    return [path]


def applicable(impl: str, hello: Any) -> list[str]:
    """The invariants that judge this implementation (run/applicability.py, with the manifest its
    peer adapter ships): the rest cannot explain it."""
    catalogue = load_catalogue()
    manifest = shipped_manifest(impl, catalogue)
    return [inv.id for inv in catalogue.invariants if not_applicable_because(inv, hello, manifest) is None]


def raised_label(detail: str) -> str:
    """`raised:<exception type>` from the harness's "raised <Type>: message"."""
    found = re.search(r"raised\s+([A-Za-z_][\w.]*)", detail)
    return f"raised:{found.group(1).rpartition('.')[2] if found else 'Exception'}"


def _explanation(result: ReplayResult, log: RegressionLog, versioned: bool) -> Explanation | None:
    """The first violation of an invariant the log names; else the first of any that judges this
    implementation (a committed regression log replayed on another kernel can break invariants it
    was not written for); else the first difference from what the log expects, as the runner
    counts it against the invariants the log names."""
    found = [v for v in result.violations if v.invariant in log.invariants] or result.violations
    if found:
        return result.explain(found[0])
    if log.expect is not None and log.invariants:
        differences = compare(log.expect, result, versioned, digests=view_digests(log))
        if differences:
            return result.explain(difference_violation(log.invariants[0], log.name, differences[0], result))
    return None


def evidence_of(finding: Finding) -> list[list[JSON]]:
    """The cited events as [execution, seq, type], which the script looks for in the logs."""
    if finding.explanation is None:
        return []
    return [[e.execution, e.seq, e.type] for e in finding.explanation.evidence if e.type]


# -- a peer, in its own API (peers/reproducer.py) -----------------------------------------
def peer_script(translation: Any, log: RegressionLog, operations: list[Operation], finding: Finding) -> str:
    from loomcheck.peers.reproducer import Found, Untranslatable, script

    why = finding.explanation
    found = Found(
        invariant=why.invariant if why else ", ".join(log.invariants),
        where=why.where if why else f"ADR {log.adr}",
        explanation=why.text() if why else _without_explanation(log, finding),
        expected=(why.expected or why.rule or "") if why else _expected_without_explanation(finding),
        claim=why.claim if why else (finding.failure or (log.found.message if log.found else "")
                                     or "the outcomes and logs loomcheck saw"),
        evidence=[(e.execution, e.seq) for e in why.evidence if e.type] if why else [],
        outcomes=finding.outcomes, logs=finding.logs, reference=finding.reference_outcomes)
    try:
        return script(translation, found, list(zip(operations, finding.outcomes)), log.name)
    except Untranslatable as exc:
        raise ReproError(f"no {translation.peer} source for this counterexample: {exc}") from exc


def _without_explanation(log: RegressionLog, finding: Finding) -> str:
    """What the docstring says when no check's violation explains the failure (an exception, or a
    corpus case whose judgement is not a per-step check)."""
    lines = [log.description] if log.description else []
    if log.found is not None:
        lines.append(f"Found as {log.found.invariant} on {log.found.implementation}: {log.found.message}")
    if finding.failure:
        lines.append(f"The implementation raised: {finding.failure}")
    return "\n".join(lines)


def _expected_without_explanation(finding: Finding) -> str:
    if finding.failure and len(finding.reference_outcomes) >= len(finding.outcomes):
        number = len(finding.outcomes)
        return (f"operation {number} answered as the reference kernel answers it "
                f"({finding.reference_outcomes[number - 1]}), not an exception")
    return "the reference kernel's outcomes"


# -- Python in process ------------------------------------------------------------------
def python_script(log: RegressionLog, impl: str, operations: list[Operation], finding: Finding) -> str:
    why = finding.explanation
    expected = (why.expected or why.rule or "") if why else ""
    # Every value the counterexample brings is a literal (repr) on a code line, or escaped in
    # a comment or the docstring: an execution id must not end either and run as code.
    found = f"{why.invariant} ({why.where})" if why else ", ".join(log.invariants)
    lines = [
        f'"""Reproduces {escaped(found)} on {escaped(impl)}.',
        "",
        "Written by `loomcheck repro`; runs without loomcheck's harness. Exit status 1: it still",
        "reproduces; 0: it no longer does. It imports the kernel by the --impl spec given,",
        f"{escaped(impl)}, resolved as loomcheck resolves it: a file or module relative to the",
        "current directory, so run it from where `loomcheck repro` ran.",
        "",
        *(escaped(line) for line in (why.text().split("\n") if why else [])),
        '"""',
        "",
        "import sys",
        "",
        *_factory_import(impl),
        "",
        "",
        "def label(outcome):",
        '    """ok, ok:crashed or refused:<reason>, from an Outcome or its dict form."""',
        "    get = outcome.get if isinstance(outcome, dict) else lambda name, default=None: getattr(outcome, name, default)",
        "    if isinstance(outcome, list):",
        '        return "ok:" + ",".join(outcome)',
        '    if not get("ok"):',
        '        return "refused:" + str(get("reason"))',
        '    return "ok:crashed" if get("crashed") else "ok"',
        "",
        "",
        "driver = make()",
        "outcomes = []",
    ]
    for number, op in enumerate(operations, start=1):
        lines += [f"# {number}. {escaped(describe(op))}", *_calls(op)]
    lines += [
        "",
        f"EXECUTIONS = {finding.executions!r}",
        f"EVIDENCE = {evidence_of(finding)!r}  # [execution, seq, type]: the events the explanation cites",
        f"FOUND = {finding.outcomes!r}  # the outcomes when loomcheck found it",
        f"EXPECTED = {finding.reference_outcomes!r}  # the reference kernel's outcomes",
        f"EXPECTATION = {expected!r}",
        f"CLAIM = {(why.claim if why else '')!r}",
        "",
        "logs = {execution: driver.read_log(execution) for execution in EXECUTIONS}",
        "close = getattr(driver, 'close', None)",
        "if close is not None:",
        "    close()",
        "for execution, log in logs.items():",
        "    print(f'log {execution}:')",
        "    for event in log:",
        "        print(f\"  #{event['seq']} {event['type']} {event.get('payload')!r}\")",
        "held = {(x, e['seq'], e['type']) for x, log in logs.items() for e in log}",
        "if EVIDENCE:",
        "    reproduces = all((x, seq, kind) in held for x, seq, kind in EVIDENCE)",
        "else:",
        "    reproduces = outcomes != EXPECTED",
        "print()",
        "print('outcomes:         ', outcomes)",
        "print('the reference:    ', EXPECTED)",
        "print('expected:', EXPECTATION or 'the outcomes of the reference kernel')",
        "print('happened:', CLAIM if reproduces else 'no longer: the cited events are gone')",
        "sys.exit(1 if reproduces else 0)",
        "",
    ]
    return "\n".join(lines)


def _factory_import(impl: str) -> list[str]:
    from loomcheck.run.loading import REFERENCE_FACTORIES, peer_target

    if impl in REFERENCE_FACTORIES:
        factory = REFERENCE_FACTORIES[impl]
        where = "in memory" if factory == "memory" else "on SQLite"
        return [f"from loomcheck.reference.driver import {factory} as make  # the reference kernel, {where}"]

    target = peer_target(impl)
    module, _, factory = target[len("python:"):].rpartition(":")
    if module.endswith(".py"):  # the path as given: relative to the directory the script runs from
        return ["import importlib.util",
                f"_spec = importlib.util.spec_from_file_location('kernel', {module!r})",
                "_module = importlib.util.module_from_spec(_spec)",
                "_spec.loader.exec_module(_module)",
                f"make = getattr(_module, {factory!r})"]
    # As `--impl python:MODULE:FACTORY` imports it: the current directory first on the import path.
    path = ["import os", "sys.path.insert(0, os.getcwd())"]
    if all(_is_name(part) for part in module.split(".")) and _is_name(factory):
        return [*path, f"from {module} import {factory} as make"]
    # Not a name Python's import statement spells (the importer took it): a literal, not source.
    return [*path, "import importlib", f"make = getattr(importlib.import_module({module!r}), {factory!r})"]


def _is_name(text: str) -> bool:
    return text.isidentifier() and not keyword.iskeyword(text) and text.isascii()


def _calls(op: Operation) -> list[str]:
    """One operation as the call the harness makes on a driver (contract/session.py), recording its outcome."""
    if isinstance(op, Define):
        call = f"driver.define_flow({op.flow!r}, {op.program!r})"
    elif isinstance(op, Start):
        call = f"driver.start({op.execution!r}, {op.flow!r}, {op.input!r})"
    elif isinstance(op, Resume):
        options = f", {op.options!r}" if op.options else ""
        call = f"driver.resume({op.execution!r}, {op.type!r}, {op.payload!r}{options})"
    elif isinstance(op, ResumeAs):
        options = f", {op.options!r}" if op.options else ""
        call = f"driver.resume_as({op.execution!r}, {op.flow!r}, {op.type!r}, {op.payload!r}{options})"
    elif isinstance(op, Recover):
        call = f"driver.recover({op.execution!r})"
    elif isinstance(op, Configure):
        call = f"driver.configure({op.config!r})"
    elif isinstance(op, Load):
        call = f"driver.load({op.execution!r}, {op.events!r}, {op.snapshot!r})"
    elif isinstance(op, RecoverAbandoned):
        call = "driver.recover_abandoned()"
    elif isinstance(op, AdvanceClock):
        call = f"driver.advance_clock({op.ms!r})"
    elif isinstance(op, Restart):
        return ["driver.restart()", "outcomes.append('ok')", "print(outcomes[-1])"]
    else:
        raise ReproError(f"{type(op).__name__} cannot run in process: a kill needs the kernel in a process of its own")
    return [f"outcomes.append(label({call}))", "print(outcomes[-1])"]


# -- the driver protocol ------------------------------------------------------------------
def _write_exchange(driver: Any, log: RegressionLog, finding: Finding, out: Path) -> list[Path]:
    launches = sorted({launch for launch, _, _ in driver.transcript})
    written = []
    for number, launch in enumerate(launches, start=1):
        for direction, name in (("sent", "requests"), ("received", "answers")):
            path = out / f"{name}-{number}.jsonl"
            path.write_bytes(b"".join(line if line.endswith(b"\n") else line + b"\n"
                                      for at, way, line in driver.transcript if at == launch and way == direction))
            written.append(path)
    script = out / "repro.sh"
    script.write_text(shell_script(driver.command, log, finding, len(launches)), encoding="utf-8")
    script.chmod(0o755)
    return [script, *written]


def shell_script(command: str, log: RegressionLog, finding: Finding, parts: int) -> str:
    why = finding.explanation
    # Comments and printed text escaped (contract/sourcetext.py): an id must not end a comment.
    comments = [f"# {escaped(line)}" for line in (why.text().split("\n") if why else [", ".join(log.invariants)])]
    expected = (why.expected or why.rule or "") if why else "the reference kernel's answers"
    return "\n".join([
        "#!/bin/sh",
        f"# Reproduces {escaped(', '.join(log.invariants))} on: {escaped(command)}",
        "# Written by `loomcheck repro`: the exact exchange loomcheck had with the implementation, one",
        "# requests-N.jsonl per process it started (a kill starts the next one on the same store).",
        "# Exit status 1: the implementation answers as it did when loomcheck found the failure.",
        "#",
        *comments,
        "set -u",
        'here=$(cd "$(dirname "$0")" && pwd)',
        'LOOMCHECK_STORE_DIR=$(mktemp -d); export LOOMCHECK_STORE_DIR',
        f"for part in $(seq 1 {parts}); do",
        f'  {command} < "$here/requests-$part.jsonl" > "$here/got-$part.jsonl" 2> "$here/stderr-$part.txt"',
        "done",
        'rm -rf "$LOOMCHECK_STORE_DIR"',
        # printf, not echo: sh's echo would read the text's backslashes as escapes.
        f"printf '%s\\n' {shlex.quote('expected: ' + escaped(expected))}",
        f"printf '%s\\n' {shlex.quote('when found: ' + escaped(why.claim if why else 'see answers-N.jsonl'))}",
        "same=1",
        f"for part in $(seq 1 {parts}); do",
        '  cmp -s "$here/answers-$part.jsonl" "$here/got-$part.jsonl" || same=0',
        "done",
        'if [ "$same" = 1 ]; then',
        "  echo 'happened: the same answers again (got-N.jsonl = answers-N.jsonl): it reproduces'",
        "  exit 1",
        "fi",
        "echo 'happened: different answers now (diff answers-N.jsonl got-N.jsonl): it may be fixed'",
        "exit 0",
        "",
    ])
