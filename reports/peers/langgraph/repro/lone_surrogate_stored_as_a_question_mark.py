"""LangGraph divergence 4: a lone surrogate in an interrupt value is stored as "?"
(ADR 0077, hostile names: a gate is answered by the name it parked on, whatever the name).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python lone_surrogate_stored_as_a_question_mark.py
Exit status 1 while LangGraph behaves so; 0 once it does not.

The interrupt invoke returns carries the name "\\ud800"; get_state() after the checkpoint's
round trip says "?", so an integration that reads the pending gate from the store cannot answer
it by name, and a restarted process sees another gate.
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint
from langgraph.types import interrupt

COVERS = {"langgraph": ("fold.key-safety",), "langgraph-raw": ("fold.key-safety",)}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


@entrypoint(checkpointer=saver)
def flow(_):
    return interrupt({"on": "\ud800"})


config = {"configurable": {"thread_id": "t"}}
returned = flow.invoke({}, config)["__interrupt__"][0].value
stored = flow.get_state(config).tasks[0].interrupts[0].value

print(f"expected: the stored interrupt names the gate the flow parked on, {ascii(returned)}")
print(f"happened: the stored interrupt is {ascii(stored)}")
sys.exit(1 if stored != returned else 0)
