"""Reproducers in a peer's own API: a counterexample found through an adapter, written as a
standalone script that needs only the peer library. The script is the adapter's own glue,
rendered from its source (the witness, the walker, the shared session and the peer's modules),
then the counterexample's operations on it and a judgement: docs/peers.md, "Reproducers"."""

from __future__ import annotations

import ast
import pprint
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

from loomcheck.contract.script import Define, Recover, RecoverAbandoned, Resume, Start, describe
from loomcheck.contract.sourcetext import escaped
from loomcheck.spec.vocabulary import vocabulary

JSON = Any

# What every peer's glue stands on, rendered before the peer's own modules, in this order.
SHARED = ("loomcheck.peers.witness", "loomcheck.peers.walker", "loomcheck.peers.session")


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
    """A peer's reproducer template: which glue modules its scripts render, and how the script
    makes the adapter's session. Subclasses fill in the class attributes."""

    peer = "peer"
    install = ""                     # the pip line the script needs
    modules: tuple[str, ...] = ()    # the peer's glue, rendered after SHARED, in order
    session = ""                     # an expression making the session; KERNEL_TYPES is defined before it
    calls: tuple[str, ...] = ("start", "resume")  # the driver operations the adapter maps

    def entry(self) -> list[str]:
        """Lines run before the session is made: where a peer that runs its application in a
        process of its own (DBOS) has the script, re-run as that process, serve instead."""
        return []

    def operation(self, op: Any) -> str:
        """An expression performing one driver operation, whose value is its outcome label
        (ok, ok:crashed, refused:<reason>, ok:<ids> for recover_abandoned)."""
        if isinstance(op, Start) and "start" in self.calls:
            return f"label(SESSION.start({op.execution!r}, {op.flow!r}, {op.input!r}))"
        if isinstance(op, Resume) and "resume" in self.calls:  # its options: no peer has a counterpart
            return f"label(SESSION.resume({op.execution!r}, {op.type!r}, {op.payload!r}))"
        if isinstance(op, Recover) and "recover" in self.calls:
            return f"label(SESSION.recover({op.execution!r}))"
        if isinstance(op, RecoverAbandoned) and "recover_abandoned" in self.calls:
            return "'ok:' + ','.join(SESSION.recover_abandoned())"
        raise Untranslatable(f"{type(op).__name__} has no {self.peer} counterpart in the adapter")


# -- the adapter's source, rendered -----------------------------------------------------------
def module_source(name: str) -> str:
    """A module's source, read without importing it (its library may not be installed)."""
    package, _, leaf = name.rpartition(".")
    return (files(package) / f"{leaf}.py").read_text(encoding="utf-8")


def _top_level_names(tree: ast.Module, source: str) -> dict[str, str]:
    """Name -> the source that defines it, for each top-level definition."""
    found: dict[str, str] = {}
    for node in tree.body:
        names: list[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        for name in names:
            found[name] = ast.get_source_segment(source, node) or ""
    return found


def _dropped_lines(name: str, tree: ast.Module, rendered: tuple[str, ...]) -> set[int]:
    """The lines a module loses in the script: its docstring, `from __future__`, and its imports of
    the other rendered modules (their names are defined in the script already)."""
    drop: set[int] = set()
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        drop.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "loomcheck" for a in node.names):
            raise ValueError(f"{name}: `import loomcheck...` cannot be rendered into a script")
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if module == "__future__" or (module in rendered and id(node) in top):
            drop.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        elif node.level > 0 or module.split(".")[0] == "loomcheck" or module in rendered:
            raise ValueError(f"{name}: imports {module or '.'} at line {node.lineno}, which the script does not hold")
    return drop


def render(modules: tuple[str, ...]) -> list[str]:
    """The modules' source as one script's lines, in order: each module less its docstring and
    its imports of the others. Two modules may not define one name differently."""
    lines: list[str] = []
    defined: dict[str, tuple[str, str]] = {}
    for name in modules:
        source = module_source(name)
        tree = ast.parse(source)
        for symbol, text in _top_level_names(tree, source).items():
            earlier = defined.setdefault(symbol, (name, text))
            if earlier[1] != text:
                raise ValueError(f"{symbol} is defined by both {earlier[0]} and {name}")
        drop = _dropped_lines(name, tree, modules)
        body = [line for number, line in enumerate(source.splitlines(), start=1) if number not in drop]
        while body and not body[0].strip():
            body.pop(0)
        lines += ["", "", f"# == {name} " + "=" * max(3, 90 - len(name)), *body]
    return lines


# -- the script around it ---------------------------------------------------------------------
PERFORM = '''


def define(flow_id, program):
    SESSION.define(flow_id, program)
    return "ok"


for title, call in OPERATIONS:
    print(title)
    try:
        outcome = call()
    except Exception as exc:  # the peer raised: that is the outcome, and the run stops there
        outcome = f"raised:{type(exc).__name__}"
        print(f"  {type(exc).__name__}: {ascii(str(exc))}")
    OUTCOMES.append(outcome)
    print(f"  -> {outcome}")
    if outcome.startswith("raised:"):
        break
'''

STATE = '''
# -- what the adapter's read_state reads of each execution, from the peer's own records ------
print()
for execution in SESSION.witness.executions():
    try:
        print(f"the peer's state of {ascii(execution)}: {json.dumps(SESSION.read_state(execution))}")
    except Exception as exc:
        print(f"the peer's state of {ascii(execution)}: reading it raised {type(exc).__name__}: {ascii(str(exc))}")
'''

JUDGEMENT = '''
# -- the judgement ------------------------------------------------------------------------
LOGS = SESSION.witness.logs()
SESSION.close()
for execution, log in LOGS.items():
    print(f"log {ascii(execution)}:")
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


def docstring(translation: Translation, found: Found, source: str) -> list[str]:
    # Every value escaped (contract/sourcetext.py): no name may close the docstring and run as code.
    return [
        f'"""Reproduces {escaped(found.invariant)} ({escaped(found.where)}) on {translation.peer}, in its own API.',
        "",
        f"Written by `loomcheck repro` from {escaped(source)}. Needs only: {translation.install}",
        "Exit status 1 while it reproduces, 0 once it does not (then re-run loomcheck on the peer).",
        "`python this.py FILE` also writes the outcomes and logs it saw as JSON.",
        "Below: loomcheck's adapter, its own source (" + ", ".join(translation.modules) + " and what they",
        "share), then the counterexample's operations on it, then what the adapter's read_state reads.",
        "",
        *(escaped(line) for line in found.explanation.split("\n")),
        '"""',
    ]


def operation_lines(translation: Translation, operations: list[tuple[Any, str]]) -> list[str]:
    """The flow programs the counterexample defines, then its operations, each with its title."""
    programs: list[str] = []
    calls = ["OPERATIONS = ["]
    for number, (op, outcome) in enumerate(operations, start=1):
        title = ascii_only(f"{number}. {describe(op)}".replace("\n", " ")[:160])
        if isinstance(op, Define) and outcome == "ok":
            name = f"PROGRAM_{number}"
            programs += [f"{name} = " + pprint.pformat(op.program, width=110, sort_dicts=False).replace(
                "\n", "\n" + " " * (len(name) + 3))]
            calls.append(f"    ({title!r}, lambda: define({op.flow!r}, {name})),")
        elif isinstance(op, Define):  # the adapter checks a program before the peer sees it
            calls.append(f"    ({title!r}, lambda: {outcome!r}),  # the adapter refused the program: not passed on")
        else:
            calls.append(f"    ({title!r}, lambda: {translation.operation(op)}),")
    return ["# -- the flow programs the counterexample defines (loomcheck's flow language) ------------",
            *programs, "", "", "# -- the counterexample's operations, as the adapter makes them ----------------",
            *calls, "]"]


def script(translation: Translation, found: Found, operations: list[tuple[Any, str]], source: str) -> str:
    """The whole script: docstring, the adapter's rendered source, the session, the operations,
    the peer's state, the judgement. `operations` pairs each operation with its outcome when
    loomcheck ran it."""
    cited = [[execution, event] for execution, seq in found.evidence
             for event in (found.logs or {}).get(execution, []) if event["seq"] == seq]
    lines = [*docstring(translation, found, source), "", "from __future__ import annotations", "",
             "import json", "import sys", *render(SHARED + translation.modules), "", "",
             "# == this counterexample " + "=" * 70,
             f"KERNEL_TYPES = frozenset({sorted(vocabulary().kernel_types)!r})", *translation.entry(),
             f"SESSION = {translation.session}", "OUTCOMES = []  # ok | ok:crashed | refused:<reason>, per operation",
             "", "", *operation_lines(translation, operations), *PERFORM.rstrip("\n").splitlines(),
             "", *STATE.strip("\n").splitlines(), "",
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


def ascii_only(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")
