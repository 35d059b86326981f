"""A realistic long execution's log, generated deterministically.

The mix is an agent-like flow that runs for a long time: tool steps (some retried,
a few in doubt) whose outputs carry the text a model or a tool returned (from a
few dozen bytes to a few kilobytes; `lean=True` leaves the text out), resource
meters after each call, decisions, a human gate every few dozen steps with its
answer and the authenticator's grant, audit facts and the flow's own emits. Every gate is parked before it is answered, so the stray
scanner finds nothing to warn about, as on a healthy production log.
"""

from __future__ import annotations

import random
from typing import Iterator


Entry = tuple[str, object]  # (type, payload)


WORDS = ("the", "ticket", "reports", "a", "timeout", "when", "syncing", "invoices", "customer", "says",
         "retry", "fixed", "it", "but", "logs", "show", "three", "failures", "since", "Monday", "and", "one")


def _texts(rng: random.Random) -> list[str]:
    """A pool of replies, 40 bytes to 4 KB, most a few hundred bytes (log-uniform lengths)."""
    pool = []
    for _ in range(64):
        length = int(40 * 100 ** rng.random())
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < length:
            words.append(rng.choice(WORDS))
        pool.append(" ".join(words))
    return pool


def entries(count: int, seed: int = 10, lean: bool = False, parked: bool = False) -> Iterator[Entry]:
    """`count` events of one execution, in order, from EXECUTION_STARTED on; the last one
    completes it, or with `parked` parks it on the gate "review"."""
    rng = random.Random(seed)
    texts = [] if lean else _texts(rng)
    yield "EXECUTION_STARTED", {"flowId": "agent", "input": {"task": "triage the backlog", "budget": 250}}
    made, step = 1, 0
    while True:
        for entry in _cycle(rng, step, texts):
            if made == count - 1:
                if parked:
                    yield "EXECUTION_SUSPENDED", {"condition": {"on": "review", "meta": {"batch": -1}}}
                else:
                    yield "EXECUTION_COMPLETED", {"output": {"steps": step, "summary": "done"}}
                return
            yield entry
            made += 1
        step += 1


def _cycle(rng: random.Random, step: int, texts: list[str]) -> Iterator[Entry]:
    step_id = f"tool-{step}"
    if rng.random() < 0.05:  # a retried attempt
        yield "STEP_STARTED", {"stepId": step_id, "attempt": 1}
        yield "STEP_FAILED", {"stepId": step_id, "error": {"message": "rate limited", "retryable": True}}
    attempt = 2 if rng.random() < 0.05 else 1
    yield "STEP_STARTED", {"stepId": step_id, "attempt": attempt}
    if rng.random() < 0.002:  # a crash mid-effect, resolved by an operator's verdict
        yield "EFFECT_INDOUBT", {"stepId": step_id, "attempt": attempt}
    output: dict[str, object] = {"status": 200, "items": rng.randrange(50), "cursor": f"c{rng.getrandbits(32):08x}"}
    if texts:
        output["text"] = rng.choice(texts)
    yield "STEP_COMPLETED", {"stepId": step_id, "output": output}
    yield "RESOURCE_METERED", {"tokens": rng.randrange(100, 4000), "costUsd": round(rng.random() / 50, 6),
                               "ms": rng.randrange(5, 900)}
    if rng.random() < 0.2:
        yield "DECISION_RECORDED", {"decisionId": f"route-{step}", "choice": rng.choice(["a", "b", "c"]),
                                    "source": "model"}
    if rng.random() < 0.1:
        yield "OUTCOME_RECORDED", {"stepId": step_id, "outcome": "ok", "checks": ["schema", "policy"]}
    if rng.random() < 0.1:
        yield "progress", {"done": step, "note": "still working"}  # the flow's own emit
    if step % 40 == 39:  # a human gate
        yield "EXECUTION_SUSPENDED", {"condition": {"on": "review", "meta": {"batch": step // 40}}}
        yield "APPROVAL_GRANTED", {"principal": "alice", "parkedAtSequence": 0, "scopes": ["review"]}
        yield "EXECUTION_RESUMED", {"approved": True, "comment": f"batch {step // 40} looks fine"}


def fill(store: object, count: int, execution_id: str = "x", batch: int = 10_000, parked: bool = False) -> None:
    """Write the log through the store's own append, in batches (one transaction each)."""
    pending: list[Entry] = []
    next_seq = 1
    for entry in entries(count, parked=parked):
        pending.append(entry)
        if len(pending) == batch:
            store.append(execution_id, next_seq, pending)  # type: ignore[attr-defined]
            next_seq += len(pending)
            pending = []
    if pending:
        store.append(execution_id, next_seq, pending)  # type: ignore[attr-defined]
