"""LangGraph divergence 3: a completed thread's records lose the last answer
(ADR 0057 Decision: the answers are an ordered record the state folds from).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python completed_thread_loses_the_last_answer.py
Exit status 1 while LangGraph behaves so; 0 once it does not.

LangGraph keeps an interrupted task's answers as its __resume__ write; the run that completes
the thread does not update it, so the checkpoints of a finished thread hold every answer but the
last. An audit of the thread cannot see the final human decision unless the flow returned it.
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint
from langgraph.types import Command, interrupt

COVERS = {"langgraph": ("fold.resume-payloads-ordered", "fold.matches-reference")}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


@entrypoint(checkpointer=saver)
def flow(_):
    interrupt({"on": "go1"})
    interrupt({"on": "go2"})
    return "done"  # the answers are not returned: the record is the only place they are kept


config = {"configurable": {"thread_id": "t"}}
flow.invoke({}, config)
for answer in ("A", "B"):
    pending = flow.get_state(config).tasks[0].interrupts[0].id
    flow.invoke(Command(resume={pending: answer}), config)  # answered by interrupt id, as documented
stored = [value for saved in saver.list(config) for _, channel, value in saved.pending_writes or []
          if channel == "__resume__"]
newest = stored[0] if stored else []

print("expected: the thread's record holds both answers in order, ['A', 'B'] (ADR 0057)")
print(f"happened: the newest __resume__ record holds {newest!r} (all of them: {stored!r})")
sys.exit(1 if newest != ["A", "B"] else 0)
