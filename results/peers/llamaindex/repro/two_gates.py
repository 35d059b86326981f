"""What the LlamaIndex reproducers share: a workflow whose one step waits for a human
answer at each named gate in turn (ctx.wait_for_event with requirements {"on": name}),
and the documented save / restore / answer cycle. Needs only llama-index-workflows."""

import json

from workflows import Context, Workflow, step
from workflows.events import HumanResponseEvent, StartEvent, StopEvent, UnhandledEvent, WorkflowIdleEvent


class Gates(Workflow):
    runs = 0  # how many times the step body has started

    @step
    async def body(self, ctx: Context, ev: StartEvent) -> StopEvent:
        type(self).runs += 1
        got = []
        for index, name in enumerate(self.names):
            answer = await ctx.wait_for_event(HumanResponseEvent, waiter_id=f"gate-{index}",
                                              requirements={"on": name}, timeout=None)
            got.append(answer.response)
        return StopEvent(result=got)


def gates(names):
    workflow = Gates(timeout=None)
    workflow.names = names
    Gates.runs = 0
    return workflow


async def quiet(handler):
    """Run until the workflow idles (parked), stops, or cannot handle an event."""
    async for event in handler.stream_events(expose_internal=True):
        if isinstance(event, UnhandledEvent):
            return "unhandled"
        if isinstance(event, WorkflowIdleEvent):
            return "idle"
        if isinstance(event, StopEvent):
            return "stop"
    return "end"


async def park(workflow):
    """Start the workflow, let it park at its first gate, and save its context."""
    handler = workflow.run()
    await quiet(handler)
    saved = handler.ctx.to_dict()
    await handler.cancel_run()
    return saved


async def answer(workflow, saved, on, response):
    """Restore the saved context, let the restored run idle, send the answer: ("stop", result)
    when the workflow finished, else (how it went quiet, the context saved again)."""
    handler = workflow.run(ctx=Context.from_dict(workflow, json.loads(json.dumps(saved))))
    await quiet(handler)
    await handler.send_event(HumanResponseEvent(on=on, response=response))
    went = await quiet(handler)
    if went == "stop":
        return went, await handler
    saved = handler.ctx.to_dict()
    await handler.cancel_run()
    return went, saved


def waiters(saved):
    return [w for worker in saved["workers"].values() for w in worker["collected_waiters"]]
