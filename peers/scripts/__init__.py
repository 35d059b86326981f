"""Reproducers in a peer's own API (issue 11): a counterexample, found through an
adapter, written as a standalone script that needs only the peer library.

The adapter runs a flow program through the peer with the generic walker
(`peers/walker.py`) and notes what the peer does as witness events
(`peers/witness.py`). A script does the same in plain source: each flow is
written out as the peer's own construct (a LangGraph entrypoint, ...) whose body
calls the peer's step and wait primitives in the program's order, and each
driver operation of the counterexample becomes the peer calls the adapter makes
for it. A small recorder at the top of the script notes the same events the
witness notes, so the script's log of each execution is the adapter's, event for
event (`tests/test_peer_scripts.py` compares them for every committed finding).

Each peer's translation (`Translation` below, one module per peer in this
package) supplies the imports, the peer's setup, a flow's wrapper and its step
and gate expressions, and the lines of each operation. This module writes what
they share: the recorder, a flow's body, and the judgement at the end.

The judgement. The script prints every outcome and each execution's log, then
what the decision expects beside what happened. It exits 1 while the failure
reproduces: every event the explanation cites is in the log again, as it was;
for a failure that cites no event, the outcomes and logs are exactly those
loomcheck saw. It exits 0 otherwise (upstream changed; re-run loomcheck).
"""

from __future__ import annotations

import pprint
from dataclasses import dataclass, field
from typing import Any

from loomcheck.contract.script import Define, Recover, RecoverAbandoned, Resume, Start
from loomcheck.contract.sourcetext import escaped
from loomcheck.spec.programs import (CompleteOp, EmitOp, FlowProgram, InputOp, ObserveOp, StepOp, SuspendOp)
from loomcheck.spec.vocabulary import vocabulary

JSON = Any


class Untranslatable(Exception):
    """The counterexample uses something the translation has no source for (the message says what)."""


@dataclass(frozen=True)
class Found:
    """What loomcheck saw when it ran the counterexample through the adapter."""

    invariant: str
    where: str                                  # "ADR 0057 Decision"
    explanation: str                            # the explanation's text
    expected: str                               # what the decision requires instead
    claim: str                                  # what happened, in a sentence
    evidence: list[tuple[str, int]]             # (execution, seq) of each cited event
    outcomes: list[str]
    logs: dict[str, list[dict[str, JSON]]] | None   # None: not known (the peer raised)
    reference: list[str] = field(default_factory=list)  # the reference kernel's outcomes


class Translation:
    """How a peer's adapter reads as the peer's own source. Subclasses fill in the hooks."""

    peer = "peer"
    install = ""            # the pip line the script needs

    # -- the script's parts -----------------------------------------------------------
    def imports(self) -> list[str]:
        return []

    def setup(self) -> list[str]:
        """The peer's store and helpers, and the adapter's calls as functions (start, resume, ...)."""
        return []

    def flow(self, flow_id: str, name: str, body: list[str]) -> list[str]:
        """A flow as the peer's construct named `name`; `body` is indented one level already."""
        raise NotImplementedError

    def step(self, op: StepOp) -> str:
        """An expression running the step through the peer (it calls the recorder's `run_step`)."""
        raise NotImplementedError

    def gate(self, index: int, condition: dict[str, JSON]) -> str:
        """An expression that waits at the index-th suspend point and is the value it passes with."""
        raise NotImplementedError

    def input(self) -> str:
        """An expression: the input this run was handed."""
        raise NotImplementedError

    # The driver operations the adapter maps, as functions the setup defines under these names.
    calls: tuple[str, ...] = ("start", "resume")

    def operation(self, op: Any, outcome: str) -> str:
        """An expression performing one driver operation, whose value is its outcome label
        (ok, ok:crashed, refused:<reason>). `outcome` is the label when loomcheck ran it.
        A resume's options are dropped: no adapter passes them on (no peer has a counterpart)."""
        if isinstance(op, Start) and "start" in self.calls:
            return f"start({op.execution!r}, {op.flow!r}, {op.input!r})"
        if isinstance(op, Resume) and "resume" in self.calls:
            return f"resume({op.execution!r}, {op.type!r}, {op.payload!r})"
        if isinstance(op, Recover) and "recover" in self.calls:
            return f"recover({op.execution!r})"
        if isinstance(op, RecoverAbandoned) and "recover_abandoned" in self.calls:
            return "recover_abandoned()"
        raise Untranslatable(f"{type(op).__name__} has no {self.peer} counterpart in the adapter")

    def state(self) -> list[str]:
        """Lines that print what the peer itself reports of each execution (its own API), for the reader."""
        return []

    def before_operations(self) -> list[str]:
        """Lines between the flows and the operations: where a peer that runs its application in
        a worker process (DBOS) has the script, re-run as that process, serve instead. None by default."""
        return []


# -- the recorder every script starts with (the witness, peers/witness.py) ----------------
RECORDER = '''
# -- what the script records: the events loomcheck's adapter noted, as Loom events ---------
LOGS = {}       # execution -> [{seq, type, payload}]
FLOW_OF = {}    # execution -> flow id
DEFINED = {}    # flow id -> the peer construct its latest definition wrote out
OUTCOMES = []   # ok | ok:crashed | refused:<reason>, per operation


def note(execution, event_type, payload):
    log = LOGS.setdefault(execution, [])
    log.append({"seq": len(log) + 1, "type": event_type, "payload": json.loads(json.dumps(payload))})


def fact(event_type, payload):
    return event_type + "\\0" + json.dumps(payload, sort_keys=True)


def emit(execution, event_type, payload):
    """An application event, once per fact (the flow language's emit rule)."""
    if all(fact(e["type"], e["payload"]) != fact(event_type, payload) for e in LOGS.get(execution, [])):
        note(execution, event_type, payload)


def started(execution, step_id):
    return sum(1 for e in LOGS.get(execution, [])
               if e["type"] == "STEP_STARTED" and e["payload"].get("stepId") == step_id)


class WorkerCrash(Exception):
    """The worker dies inside a step (a crash fault of the counterexample)."""


class EmitRefused(Exception):
    """The flow emitted a kernel event type; the run fails (ADR 0104 D1)."""


def run_step(execution, step_id, output, crash_attempts, through):
    """Run the step through the peer (`through(step_id, body)`); note what the peer does."""
    ran = []

    def body():
        attempt = started(execution, step_id) + 1
        ran.append(attempt)
        note(execution, "STEP_STARTED", {"stepId": step_id, "attempt": attempt})
        if attempt in crash_attempts:
            raise WorkerCrash(f"{step_id}#{attempt}")
        return output

    value = through(step_id, body)
    if ran:  # the peer ran the body: what it hands back is what it recorded
        note(execution, "STEP_COMPLETED", {"stepId": step_id, "output": value})
    return value


def observe(execution, passed):
    """What each gate passed with since the last observe."""
    for gate, on, value in passed:
        emit(execution, "loomcheck.observed", {"gate": gate, "on": on, "value": value})
    passed.clear()


def define(flow_id, construct):
    DEFINED[flow_id] = construct
    return "ok"
'''

PERFORM = '''
for title, call in OPERATIONS:
    print(title)
    try:
        label = call()
    except Exception as exc:  # the peer raised: that is the outcome, and the run stops there
        label = f"raised:{type(exc).__name__}"
        print(f"  {type(exc).__name__}: {exc}")
    OUTCOMES.append(label)
    print(f"  -> {label}")
    if label.startswith("raised:"):
        break
'''

JUDGEMENT = '''
# -- the judgement ------------------------------------------------------------------------
for execution, log in LOGS.items():
    print(f"log {execution}:")
    for event in log:
        print(f"  #{event['seq']} {ascii(event['type'])[1:-1]} {json.dumps(event['payload'])}")
if len(sys.argv) > 1:  # python this.py FILE: what the script saw, as JSON
    with open(sys.argv[1], "w") as out:
        json.dump({"outcomes": OUTCOMES, "logs": LOGS}, out)
if EVIDENCE:
    reproduces = all(event in LOGS.get(execution, []) for execution, event in EVIDENCE)
else:
    reproduces = OUTCOMES == FOUND_OUTCOMES and FOUND_LOGS in (None, LOGS)
print()
print("outcomes:      ", OUTCOMES)
print("the reference: ", REFERENCE)
print("expected:", EXPECTED)
print("happened:", CLAIM if reproduces else "no longer: " + ("the cited events are gone" if EVIDENCE
                                                              else "the outcomes or logs differ from when it was found"))
sys.exit(1 if reproduces else 0)
'''


def body_lines(translation: Translation, program: FlowProgram, execution: str = "x") -> list[str]:
    """A flow program's ops as statements, in order: the walker's rules (walker.run_program)."""
    kernel = vocabulary().kernel_types
    lines = ["passed = []  # (gate, on, value) since the last observe"]
    point = 0
    for op in program.body:
        if isinstance(op, StepOp):
            lines.append(f"{translation.step(op)}  # step {escaped(op.id)}")
        elif isinstance(op, SuspendOp):
            condition = {**{k: v for k, v in (op.meta or {}).items() if k != "stepId"}, "on": op.on}
            lines.append(f"passed.append(({point}, {op.on!r}, {translation.gate(point, condition)}))  # gate {point}")
            point += 1
        elif isinstance(op, ObserveOp):
            lines.append(f"observe({execution}, passed)")
        elif isinstance(op, InputOp):
            lines.append(f"emit({execution}, 'loomcheck.input', {{'value': {translation.input()}}})")
        elif isinstance(op, EmitOp):
            if op.type in kernel:
                lines.append(f"raise EmitRefused({op.type + ' is a kernel event type'!r})")
                return lines
            lines.append(f"emit({execution}, {op.type!r}, {op.payload!r})")
        elif isinstance(op, CompleteOp):
            lines.append(f"return {op.output!r}")
            return lines
        else:
            raise Untranslatable(f"op {type(op).__name__} has no {translation.peer} source here")
    lines.append("return None")
    return lines


def crash_attempts(op: StepOp) -> tuple[int, ...]:
    return tuple(op.crash.attempts or [1]) if op.crash is not None else ()


def flow_name(index: int) -> str:
    return f"flow_{index}"


def docstring(translation: Translation, found: Found, source: str) -> list[str]:
    # Every value escaped (contract/sourcetext.py): no name may close the docstring and run as code.
    return [
        f'"""Reproduces {escaped(found.invariant)} ({escaped(found.where)}) on {translation.peer}, in its own API.',
        "",
        f"Written by `loomcheck repro` from {escaped(source)}. Needs only: {translation.install}",
        "Exit status 1 while it reproduces, 0 once it does not (then re-run loomcheck on the peer).",
        "`python this.py FILE` also writes the outcomes and logs it saw as JSON.",
        "",
        *(escaped(line) for line in found.explanation.split("\n")),
        '"""',
    ]


def script(translation: Translation, found: Found, operations: list[tuple[Any, str]], source: str) -> str:
    """The whole script: docstring, imports, recorder, the peer's setup, flows, operations, judgement.
    `operations` pairs each operation with its outcome when loomcheck ran it."""
    lines = [*docstring(translation, found, source), "", "import json", "import sys", "",
             *translation.imports(), "", *RECORDER.strip("\n").splitlines(), "", "",
             *translation.setup(), "", "", "# -- the flows: loomcheck's flow programs as the peer's own code ----------"]
    names: dict[int, str] = {}  # operation index -> the construct its define wrote out
    for index, (op, outcome) in enumerate(operations):
        if isinstance(op, Define) and outcome == "ok":  # each definition its own construct: a redefinition
            names[index] = flow_name(len(names))       # changes what later runs of the flow run
            body = ["    " + line for line in body_lines(translation, FlowProgram.model_validate(op.program))]
            lines += ["", *translation.flow(op.flow, names[index], body)]
    lines += translation.before_operations()
    lines += ["", "", "# -- the counterexample's operations, as the adapter makes them ----------------",
              "OPERATIONS = ["]
    for number, (op, outcome) in enumerate(operations, start=1):
        title = _summary(number, op)
        if isinstance(op, Define) and outcome == "ok":
            lines.append(f"    ({title!r}, lambda: define({op.flow!r}, {names[number - 1]})),")
        elif isinstance(op, Define):  # the adapter checks a program before the peer sees it
            lines.append(f"    ({title!r}, lambda: {outcome!r}),  # the adapter refused the program: not written out")
        else:
            lines.append(f"    ({title!r}, lambda: {translation.operation(op, outcome)}),")
    lines += ["]", *PERFORM.strip("\n").splitlines()]
    cited = [[execution, event] for execution, seq in found.evidence
             for event in (found.logs or {}).get(execution, []) if event["seq"] == seq]
    lines += ["", *translation.state(), "",
              f"EVIDENCE = {cited!r}  # the events the explanation cites: [execution, event]",
              f"FOUND_OUTCOMES = {found.outcomes!r}  # when loomcheck found it",
              # An execution the operations only named (an unknown id) has no log in the script either.
              "FOUND_LOGS = " + pprint.pformat(None if found.logs is None else {x: log for x, log in found.logs.items() if log},
                                               width=110, sort_dicts=False).replace("\n", "\n" + " " * 13),
              f"REFERENCE = {found.reference!r}  # the reference kernel's outcomes for the same operations",
              f"EXPECTED = {ascii_only(found.expected)!r}",  # printable whatever the names (a lone surrogate)
              f"CLAIM = {ascii_only(found.claim)!r}",
              *JUDGEMENT.rstrip("\n").splitlines(), ""]
    return "\n".join(lines)


def _summary(number: int, op: Any) -> str:
    from loomcheck.contract.script import describe

    return ascii_only(f"{number}. {describe(op)}".replace("\n", " ")[:160])


def ascii_only(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")
