"""LlamaIndex behaviour B: after a restore, an answered gate takes any later answer
(ADR 0057 Decision: gate i gets answer i; ADR 0104 D1: an answer is taken only by the gate it names).

Runs with LlamaIndex alone: pip install llama-index-workflows; python b_an_answered_gate_takes_any_later_answer.py
Exit status 1 while LlamaIndex behaves so; 0 once it does not.

A workflow with gates go1 and go2 is answered at go1 and saved. The waiter's requirements are
not serialized and a resolved waiter is never registered again, so after the restore the
answered go1 matches every HumanResponseEvent: an answer named "nope" (or another gate's, a
kernel event's, __proto__) is not refused as unhandled but replaces go1's answer.
"""

import asyncio
import json
import sys

from two_gates import answer, gates, park, waiters

COVERS = {"llamaindex": ("gate.i-receives-entry-i", "gate.beyond-answers-parks", "gate.completes-after-n-answers",
                         "fold.resume-payloads-ordered", "answer.one-suspend-point", "answer.addressed-while-parked",
                         "fold.null-resume-status-only", "refusal.typed-reason", "resume.kernel-namespace",
                         "resume.gate-mismatch", "fold.matches-reference", "fold.key-safety")}


async def scenario():
    workflow = gates(["go1", "go2"])
    saved = await park(workflow)
    _, saved = await answer(workflow, saved, "go1", "a")
    went, saved = await answer(workflow, saved, "nope", "b")
    first = next(w for w in waiters(saved) if w["waiter_id"] == "gate-0")
    return went, json.loads(first["resolved_event"])["value"]["_data"]


went, go1 = asyncio.run(scenario())
print("expected: the answer named 'nope' is refused (no gate of that name is parked); go1 keeps 'a'")
print(f"happened: the workflow went {went}, and go1's answer is now {go1!r}")
sys.exit(1 if go1 == {"on": "nope", "response": "b"} else 0)
