"""LlamaIndex behaviour C: a later same-name answer re-resolves an earlier gate, in one live run
(ADR 0057 Decision: each gate gets its own answer, in order).

Runs with LlamaIndex alone: pip install llama-index-workflows; python c_a_later_answer_re_resolves_an_earlier_gate.py
Exit status 1 while LlamaIndex behaves so; 0 once it does not.

Two gates of the same name, answered "a" then "b", with no save or restore at all: resolved
waiters stay until the step completes and matching visits them all, so the first gate's answer
is replaced by the second's.
"""

import asyncio
import sys

from two_gates import gates, quiet
from workflows.events import HumanResponseEvent

COVERS = {"llamaindex": ("gate.i-receives-entry-i", "fold.resume-payloads-ordered", "fold.matches-reference")}


async def scenario():
    workflow = gates(["go", "go"])
    handler = workflow.run()
    await quiet(handler)
    await handler.send_event(HumanResponseEvent(on="go", response="a"))
    await quiet(handler)
    await handler.send_event(HumanResponseEvent(on="go", response="b"))
    return await handler


result = asyncio.run(scenario())
print("expected: ['a', 'b'], each gate with its own answer")
print(f"happened: {result!r}")
sys.exit(1 if result == ["b", "b"] else 0)
