"""LlamaIndex behaviour A: no step memo; the step re-runs on every answer and every restore
(ADR 0057 Context: a re-run replays recorded steps, it does not run them again).

Runs with LlamaIndex alone: pip install llama-index-workflows; python a_step_reruns_on_every_answer.py
Exit status 1 while LlamaIndex behaves so; 0 once it does not.

A workflow with one gate is parked, saved, restored and answered. LlamaIndex documents that
wait_for_event "replays the entire step when the event arrives"; the restore also re-runs it once
more to register the waiter's requirements again (to_dict does not keep them). Whatever the step
did before the wait (an LLM call, a payment) happens three times for one answer.
"""

import asyncio
import sys

from two_gates import Gates, answer, gates, park

COVERS = {"llamaindex": ("typed.undeclared-unchanged", "refusal.append-nothing", "replay.step-runs-once",
                          "model.refines-gate-discipline")}


async def scenario():
    workflow = gates(["go1"])
    saved = await park(workflow)
    went, result = await answer(workflow, saved, "go1", "a")
    return went, result, Gates.runs


went, result, runs = asyncio.run(scenario())
print("expected: the step's work before the gate runs once (ADR 0057 Context)")
print(f"happened: the workflow {went}s with {result!r} after the step body started {runs} times")
sys.exit(1 if runs > 1 else 0)
