"""LangGraph divergence 2: Command(resume=None) raises (ADR 0104 D3: null is an ordinary answer).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python null_resume_raises.py
Exit status 1 while LangGraph behaves so; 0 once it does not.

In langgraph/pregel/_loop.py the variable resume_is_map is bound only when the resume value is
not None, so Command(resume=None) raises UnboundLocalError instead of answering (or refusing).
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint
from langgraph.types import Command, interrupt

COVERS = {"langgraph-raw": ("recovery.records-no-answer",)}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))


@entrypoint(checkpointer=saver)
def flow(_):
    return interrupt({"on": "go1"})


config = {"configurable": {"thread_id": "t"}}
flow.invoke({}, config)  # parks on go1
try:
    happened = f"returned {flow.invoke(Command(resume=None), config)!r}"
    raised = False
except UnboundLocalError as exc:
    happened, raised = f"raised UnboundLocalError: {exc}", True

print("expected: go1 passes with the answer null (ADR 0104 D3), or a typed refusal")
print(f"happened: {happened}")
sys.exit(1 if raised else 0)
