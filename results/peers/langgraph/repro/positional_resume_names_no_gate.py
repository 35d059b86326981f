"""LangGraph divergence 5: no ingress rules in the public API (ADR 0104 D1, D4).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python positional_resume_names_no_gate.py
Exit status 1 while LangGraph behaves so; 0 once it does not.

A positional Command(resume=...) names no gate and carries no event type: an answer meant for
go2, or sent as a kernel event (EXECUTION_CANCELLED) or under a hostile name (__proto__), is
taken by whatever interrupt is pending, go1 here. Nothing is refused, so nothing has a typed
reason. (LangGraph's strict resume mode, which refuses an unknown interrupt id, sits behind an
internal config key, __pregel_strict_resume, that its public API does not offer.)
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint
from langgraph.types import Command, interrupt

COVERS = {"langgraph-raw": ("answer.one-suspend-point", "answer.addressed-while-parked", "refusal.append-nothing",
                            "refusal.typed-reason", "resume.kernel-namespace", "resume.gate-mismatch",
                            "fold.key-safety")}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


@entrypoint(checkpointer=saver)
def flow(_):
    return {"go1": interrupt({"on": "go1"}), "go2": interrupt({"on": "go2"})}


taken = {}
for thread, meant_for in (("a", "go2"), ("b", "EXECUTION_CANCELLED"), ("c", "__proto__")):
    config = {"configurable": {"thread_id": thread}}
    flow.invoke({}, config)  # parks on go1
    flow.invoke(Command(resume=f"an answer meant for {meant_for}"), config)
    state = flow.get_state(config)
    taken[meant_for] = state.values or state.tasks[0].interrupts[0].value

print("expected: each answer refused, nothing recorded (ADR 0104 D1: only a resume naming the parked gate answers it)")
for meant_for, state in taken.items():
    print(f"happened: the answer meant for {meant_for} was taken; the thread now waits on {state!r}")
sys.exit(1 if all(state == {"on": "go2"} for state in taken.values()) else 0)
