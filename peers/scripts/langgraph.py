"""The LangGraph adapter (peers/langgraph.py) as LangGraph source: each flow an
`@entrypoint` on a SQLite checkpointer, each step a `@task`, each gate an
`interrupt`, and the driver operations as the adapter's `invoke` calls."""

from __future__ import annotations

from typing import Any

from loomcheck.peers.scripts import Translation, crash_attempts
from loomcheck.contract.sourcetext import escaped
from loomcheck.spec.programs import StepOp
from loomcheck.spec.vocabulary import vocabulary

JSON = Any

SETUP = '''
# -- LangGraph, as the adapter drives it: one thread per execution (peers/langgraph.py) --
saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
LAST = {}  # execution -> how LangGraph's latest run of the thread ended


@task(name="loomcheck_step")
def loomcheck_step(step_id, body):
    return {"stepId": step_id, "output": body()}


def through_task(step_id, body):
    return loomcheck_step(step_id, body).result()["output"]


def config(execution):
    return {"configurable": {"thread_id": execution}}


def thread():
    return get_config()["configurable"]["thread_id"]


def run(execution, command):
    """One invoke of the thread's entrypoint, and how it ended as LangGraph returned it."""
    try:
        returned = DEFINED[FLOW_OF[execution]].invoke(command, config(execution))
    except WorkerCrash as crash:
        ending = ("crashed", str(crash))
    except EmitRefused as refused:
        ending = ("failed", {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(refused)})
    else:
        if isinstance(returned, dict) and "__interrupt__" in returned:
            value = returned["__interrupt__"][0].value
            ending = ("parked", value if isinstance(value, dict) else {"on": value})
        else:
            ending = ("completed", returned)
    LAST[execution] = ending
    print(f"  LangGraph: {ending[0]} {ending[1]!r}")
    return settle(execution, ending)


def settle(execution, ending):
    kind, value = ending
    if kind == "parked":
        note(execution, "EXECUTION_SUSPENDED", {"condition": value})
    elif kind == "completed":
        note(execution, "EXECUTION_COMPLETED", {"output": value})
    elif kind == "failed":
        note(execution, "EXECUTION_FAILED", {"error": value})
    else:
        return "ok:crashed"  # the worker died: nothing more is written
    return "ok"


def parked(execution, snapshot):
    """The interrupt the thread waits on (the checkpoint's pending one), when its latest run parked."""
    kind, value = LAST.get(execution, (None, None))
    if kind != "parked":
        return None
    stored = [i.value for t in snapshot.tasks for i in t.interrupts]
    value = stored[-1] if stored else value
    return value if isinstance(value, dict) else {"on": value}


def start(execution, flow_id, input):
    if flow_id not in DEFINED:
        return "refused:unknown-flow"
    if execution in FLOW_OF:  # a used thread id would continue that thread
        return "refused:duplicate-execution"
    FLOW_OF[execution] = flow_id
    note(execution, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
    return run(execution, {"input": input})  # LangGraph reads an input of None as "continue"


def resume(execution, event_type, payload):
    if execution not in FLOW_OF:  # LangGraph would start a new thread with this answer
        return "refused:unknown-execution"
    snapshot = DEFINED[FLOW_OF[execution]].get_state(config(execution))
    refused = guard(execution, event_type, snapshot)
    if refused:
        return refused
    addressed = [i for t in snapshot.tasks for i in t.interrupts
                 if isinstance(i.value, dict) and i.value.get("on") == event_type]
    # Addressed to the pending interrupt that names the gate, else LangGraph's positional form.
    command = Command(resume={addressed[0].id: payload}) if addressed else Command(resume=payload)
    print(f"  LangGraph: invoke({command!r})")
    note(execution, event_type, payload)  # LangGraph takes every answer
    note(execution, "EXECUTION_RESUMED", payload)
    return run(execution, command)


def recover(execution):
    if execution not in FLOW_OF:
        return "refused:unknown-execution"
    refused = guard(execution, None, DEFINED[FLOW_OF[execution]].get_state(config(execution)))
    if refused:
        return refused
    note(execution, "EXECUTION_RECOVERED", {})
    print("  LangGraph: invoke(None)  # continue the thread from its last checkpoint")
    return run(execution, None)


def recover_abandoned():
    crashed = [x for x in FLOW_OF if LAST.get(x, ("",))[0] == "crashed"]
    for execution in crashed:
        recover(execution)
    return "ok:" + ",".join(crashed)
'''

GUARD = '''

KERNEL_TYPES = {kernel!r}


def guard(execution, event_type, snapshot):
    """What an integration checks before answering, from LangGraph's own report of the thread
    (loomcheck's guarded mode: LangGraph itself checks none of it)."""
    if event_type is not None and event_type in KERNEL_TYPES:
        return "refused:kernel-namespace"
    waiting = parked(execution, snapshot)
    if event_type is None:  # a recovery re-drives crashed threads only (ADR 0104 D4)
        if waiting is not None:
            return "refused:not-suspended"
        if LAST.get(execution, ("",))[0] in ("completed", "failed"):
            return "refused:terminal"
        return None
    if waiting is None:
        return "refused:not-suspended"
    if waiting.get("on") != event_type:
        return "refused:gate-mismatch"
    return None
'''

RAW = '''

def guard(execution, event_type, snapshot):
    return None  # raw: every call goes straight to LangGraph
'''


STATE = '''
# -- what LangGraph itself reports of each thread (what the adapter's read_state reads) ----
print()
for execution, flow_id in FLOW_OF.items():
    try:
        snapshot = DEFINED[flow_id].get_state(config(execution))
        first = next((c for c in saver.list(config(execution)) if c.metadata.get("source") == "input"), None)
        answers = [v for _, channel, v in (first.pending_writes or []) if channel == "__resume__"] if first else []
        waiting = [i.value for t in snapshot.tasks for i in t.interrupts]
        print(f"LangGraph's state of {execution}: values {snapshot.values!r}, pending interrupts {waiting!r}, "
              f"the entrypoint's resume values {answers!r}")
    except Exception as exc:
        print(f"LangGraph's state of {execution}: get_state raised {type(exc).__name__}: {exc}")
'''


class LangGraphScript(Translation):
    peer = "LangGraph"
    install = "pip install langgraph langgraph-checkpoint-sqlite"
    calls = ('start', 'resume', 'recover', 'recover_abandoned')

    def __init__(self, guarded: bool) -> None:
        self.guarded = guarded
        self.peer = "LangGraph" + ("" if guarded else " (raw: no integration checks before an answer)")

    def imports(self) -> list[str]:
        return ["import sqlite3", "", "from langgraph.checkpoint.sqlite import SqliteSaver",
                "from langgraph.config import get_config", "from langgraph.func import entrypoint, task",
                "from langgraph.types import Command, interrupt"]

    def setup(self) -> list[str]:
        guard = GUARD.format(kernel=sorted(vocabulary().kernel_types)) if self.guarded else RAW
        return (SETUP.strip("\n") + guard.rstrip("\n")).splitlines()

    def flow(self, flow_id: str, name: str, body: list[str]) -> list[str]:
        return ["@entrypoint(checkpointer=saver)",
                f"def {name}(start):  # flow '{escaped(flow_id)}'; the input travels as {{'input': value}}",
                "    x = thread()",
                *body]

    def step(self, op: StepOp) -> str:
        return f"run_step(x, {op.id!r}, {op.output!r}, {crash_attempts(op)!r}, through_task)"

    def gate(self, index: int, condition: dict[str, JSON]) -> str:
        return f"interrupt({condition!r})"

    def input(self) -> str:
        return "start['input']"

    def state(self) -> list[str]:
        return STATE.strip("\n").splitlines()
