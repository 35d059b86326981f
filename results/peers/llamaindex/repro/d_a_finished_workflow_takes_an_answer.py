"""LlamaIndex behaviour D: a finished context, restored and run, starts a new run that takes
the answer (ADR 0104 D4: an answer to an execution that is not parked is refused not-suspended).

Runs with LlamaIndex alone: pip install llama-index-workflows; python d_a_finished_workflow_takes_an_answer.py
Exit status 1 while LlamaIndex behaves so; 0 once it does not.

A one-gate workflow is answered and finishes; its context is saved. Restoring that context and
sending another answer starts a new run, without its input, over the old state store, and the
new run's gate takes the answer.
"""

import asyncio
import sys

from two_gates import answer, gates, quiet
from workflows.events import HumanResponseEvent

COVERS = {"llamaindex": ("gate.completes-after-n-answers", "answer.one-suspend-point", "fold.null-resume-status-only",
                         "resume.not-suspended", "fold.matches-reference", "fold.key-safety")}


async def scenario():
    workflow = gates(["go1"])
    handler = workflow.run()
    await quiet(handler)
    await handler.send_event(HumanResponseEvent(on="go1", response="a"))
    await handler  # finished with ["a"]
    finished = handler.ctx.to_dict()
    return finished["is_running"], await answer(workflow, finished, "go1", "again")


running, (went, result) = asyncio.run(scenario())
print("expected: the answer to the finished workflow is refused (ADR 0104 D4, not-suspended)")
print(f"happened: the finished workflow (is_running={running}) was restored and {went}ped with {result!r}")
sys.exit(1 if (went, result) == ("stop", ["again"]) else 0)
