"""LangGraph divergence 1: a re-drive hands a positional answer to the next gate
(ADR 0104 D1, a recovery never answers a gate; ADR 0057, gate i gets answer i).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python redrive_redelivers_an_answer.py
Exit status 1 while LangGraph behaves so; 0 once it does not (then re-run loomcheck on it and
update results/peers/langgraph*/ and adapters/manifests/langgraph*.toml).

A thread parks on two interrupts in turn. The first is answered with the documented positional
form, Command(resume="A1"); the thread parks on the second. invoke(None), LangGraph's way to
continue a thread (after a crash, say), then passes the second interrupt with "A1": an answer
nobody gave it.
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint
from langgraph.types import Command, interrupt

COVERS = {"langgraph-raw": ("gate.i-receives-entry-i", "recovery.skips-parked", "model.refines-gate-discipline")}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


@entrypoint(checkpointer=saver)
def flow(_):
    return [interrupt({"on": "go1"}), interrupt({"on": "go2"})]


config = {"configurable": {"thread_id": "t"}}
flow.invoke({}, config)                      # parks on go1
flow.invoke(Command(resume="A1"), config)    # go1 gets "A1"; parks on go2
result = flow.invoke(None, config)           # a re-drive: no answer for go2 was given

print("expected: the re-drive parks on go2 again (ADR 0104 D1: a re-drive answers no gate)")
print(f"happened: {result!r}")
sys.exit(1 if result == ["A1", "A1"] else 0)
