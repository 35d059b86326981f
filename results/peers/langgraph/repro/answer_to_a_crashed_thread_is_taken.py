"""LangGraph divergence 6: an answer sent while no interrupt is pending is taken (ADR 0104 D4:
a resume that arrives before the execution parks is refused, nothing appended).

Runs with LangGraph alone: pip install langgraph langgraph-checkpoint-sqlite; python answer_to_a_crashed_thread_is_taken.py
Exit status 1 while LangGraph behaves so; 0 once it does not.

A thread's first interrupt is answered; the task after it raises (the worker dies), so the thread
waits on no interrupt. A second, positional Command(resume=...) is not refused: LangGraph re-runs
the thread with it, and the next interrupt, which nobody has answered, passes with it.
"""

import sqlite3
import sys

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

COVERS = {"langgraph-raw": ("resume.not-suspended",)}

saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
attempts = []


@task
def effect():
    attempts.append(1)
    if len(attempts) == 1:
        raise RuntimeError("the worker dies")
    return 1


@entrypoint(checkpointer=saver)
def flow(_):
    first = interrupt({"on": "go1"})
    effect().result()
    second = interrupt({"on": "go2"})
    return {"go1": first, "go2": second}


config = {"configurable": {"thread_id": "t"}}
flow.invoke({}, config)                                  # parks on go1
try:
    flow.invoke(Command(resume={"answer": "A"}), config)  # go1 answered; the task raises
except RuntimeError:
    pass
pending = [i.value for t in flow.get_state(config).tasks for i in t.interrupts]
result = flow.invoke(Command(resume={"answer": "A"}), config)  # an answer while nothing waits for one

print("expected: the second answer refused: the thread's last run raised, it is parked at no interrupt "
      f"(get_state still lists the answered {pending!r} beside the error)")
print(f"happened: it was taken: {result!r}")
sys.exit(1 if isinstance(result, dict) and result.get("go2") == {"answer": "A"} else 0)
