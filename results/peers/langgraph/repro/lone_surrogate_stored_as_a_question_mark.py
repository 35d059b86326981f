"""LangGraph divergence 4: a lone surrogate is stored as "?" by the SQLite checkpointer
(ADR 0077, hostile names: a gate is answered by the name it parked on, whatever the name;
ADR 0057: gate i passes with the answer it was given).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python lone_surrogate_stored_as_a_question_mark.py
Exit status 1 while LangGraph behaves so; 0 once it does not.

1. The interrupt invoke returns carries the name "\\ud800"; get_state() after the checkpoint's
   round trip says "?", so an integration that reads the pending gate from the store cannot answer
   it by name, and a restarted process sees another gate.
2. The same happens to an answer. A thread is answered "\\ud800"; the task after the interrupt
   raises (the worker dies); invoke(None) re-runs the thread, and the interrupt now returns the
   answer as stored: "?", a value nobody gave it.
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

COVERS = {"langgraph": ("fold.key-safety", "gate.i-receives-entry-i", "model.refines-gate-discipline"),
          "langgraph-raw": ("fold.key-safety",)}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


@entrypoint(checkpointer=saver)
def named(_):
    return interrupt({"on": "\ud800"})


config = {"configurable": {"thread_id": "t"}}
returned = named.invoke({}, config)["__interrupt__"][0].value
stored = named.get_state(config).tasks[0].interrupts[0].value

attempts = []


@task
def effect():
    attempts.append(1)
    if len(attempts) == 1:
        raise RuntimeError("the worker dies")
    return 1


@entrypoint(checkpointer=saver)
def answered(_):
    answer = interrupt({"on": "go1"})
    effect().result()
    return answer


other = {"configurable": {"thread_id": "u"}}
answered.invoke({}, other)
try:
    answered.invoke(Command(resume="\ud800"), other)
except RuntimeError:
    pass
passed = answered.invoke(None, other)

print(f"expected: the stored interrupt names the gate the flow parked on, {ascii(returned)}; "
      f"after the re-run the gate passes with its answer, {ascii(chr(0xd800))}")
print(f"happened: the stored interrupt is {ascii(stored)}; the gate passed with {ascii(passed)}")
sys.exit(1 if stored != returned or passed != "\ud800" else 0)
