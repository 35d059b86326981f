"""The fleet corpus: seeded generated cases, each a small flow program and a history of
operations by nodes of the versions a deploy schedule picks, then one final operation
judged by the current kernel; after the hand-written cases. Case i draws from its own
seeded generator only, so the same seed and count give byte-identical output
(docs/fleet.md)."""

from __future__ import annotations

import random
from typing import Callable

from loomcheck.fleet.corpus import Case, Corpus
from loomcheck.fleet.current_run import JSON, Program
from loomcheck.fleet.expectation import EXECUTION, FLOW, build_case, history_entry
from loomcheck.fleet.scripted_cases import downgrade_hazard_cases, fixed_cases
from loomcheck.fleet.writers import CURRENT, PRE_0104, PRE_116, Fleet
from loomcheck.reference.fold import State
from loomcheck.spec.names import IN_DOUBT_GATE

SCHEDULES = ("all-old", "rolling", "rolling-straggler", "all-new")


# -- random programs and payloads -----------------------------------------------------------
def random_program(rng: random.Random) -> Program:
    """2-6 ops among gates, idempotent / non-idempotent steps (maybe with a crash
    fault, so recovery and in-doubt parks happen) and human steps; an observe after
    each suspend point records what it received."""
    body: list[JSON] = []
    steps = humans = gates = 0
    for _ in range(rng.randint(2, 6)):
        kind = rng.choices(["gate", "idempotent", "non-idempotent", "human"], weights=[3, 2, 2, 1.5])[0]
        if kind == "gate":
            gates += 1
            body += [{"op": "suspend", "on": f"go{gates}"}, {"op": "observe"}]
        elif kind == "human":
            humans += 1
            body += [{"op": "step", "id": f"h{humans}", "kind": "human", "on": f"ok-h{humans}"}, {"op": "observe"}]
        else:
            steps += 1
            body.append(_random_step(rng, f"s{steps}", kind))
    return {"body": body}


def _random_step(rng: random.Random, step_id: str, kind: str) -> dict[str, JSON]:
    step: dict[str, JSON] = {"op": "step", "id": step_id, "output": f"out-{step_id}"}
    if kind == "non-idempotent":
        step["kind"] = kind
    if rng.random() < (0.6 if kind == "non-idempotent" else 0.4):
        step["crash"] = {"at": rng.choice(["before-effect", "after-effect"]),
                         "attempts": rng.choice([[1], [1], [1, 2]])}
    return step


def random_payload(rng: random.Random) -> JSON:
    """A small JSON answer; `{}` and null on purpose: they look like what old kernels wrote."""
    return rng.choice([{"ok": True}, {"n": rng.randint(1, 9)}, {"by": rng.choice(["ann", "bo"])}, "yes", 7,
                       [1, 2], None, {}])


def random_verdict(rng: random.Random, step_id: str) -> dict[str, JSON]:
    resolution = rng.choice(["succeeded", "succeeded", "failed", "retry-fresh"])
    verdict: dict[str, JSON] = {"stepId": step_id, "resolution": resolution}
    if resolution == "succeeded":
        verdict["output"] = f"verdict-{step_id}"
    return verdict


# -- deploy schedules ----------------------------------------------------------------------
def schedule_writers(rng: random.Random, schedule: str, count: int) -> list[str]:
    """The node version for each of `count` operations under a deploy schedule."""
    def old() -> str:
        return rng.choice([PRE_0104, PRE_0104, PRE_116])

    if schedule == "all-old":
        return [old() for _ in range(count)]
    if schedule == "all-new":
        return [CURRENT] * count
    cut = rng.randint(1, count) if schedule == "rolling" else rng.randint(0, count - 1)
    writers = [old() if i < cut else CURRENT for i in range(count)]
    if schedule == "rolling-straggler":
        # ADR 0104 D2, "Rolling deploys": old nodes still write after new ones did.
        writers = [w if i <= cut else rng.choice([old(), CURRENT]) for i, w in enumerate(writers)]
    return writers


# -- the history ----------------------------------------------------------------------------
def next_operation(rng: random.Random, fleet: Fleet, view: State) -> dict[str, JSON] | None:
    """An operation that fits the execution as this node reads it; None to do nothing."""
    last = fleet.store.next_seq(EXECUTION) - 1
    retained_from = (fleet.store.get_snapshot(EXECUTION) or (0, None))[0]
    if last > retained_from + 1 and rng.random() < 0.12:
        return {"op": "truncate", "upto": rng.randint(retained_from + 1, last)}
    if view.status == "suspended":
        return _answer(rng, view, resume_as=rng.random() < 0.2)
    if view.status in ("running", "pending"):
        if rng.random() < 0.75:
            return {"op": "recover"}
        return {"op": "resumeAs", "flowId": FLOW, "type": "migrate", "payload": random_payload(rng)}
    if rng.random() < 0.6:
        return {"op": "resumeAs", "flowId": FLOW, "type": "reopen", "payload": random_payload(rng)}
    return None


def _answer(rng: random.Random, view: State, resume_as: bool) -> dict[str, JSON]:
    """A resume (or resumeAs) naming the parked gate; at an in-doubt park, a verdict."""
    condition = view.suspended_on or {}
    on = str(view.parked_on)
    payload = random_verdict(rng, str(condition.get("stepId"))) if on == IN_DOUBT_GATE else random_payload(rng)
    if resume_as:
        return {"op": "resumeAs", "flowId": FLOW, "type": on, "payload": payload}
    return {"op": "resume", "type": on, "payload": payload}


def final_operation(rng: random.Random, view: State) -> dict[str, JSON]:
    """The operation judged by the current kernel: resume the parked gate, recover a
    crashed execution, or resumeAs (onto a terminal execution too: judged live)."""
    if view.status == "suspended":
        operation = _answer(rng, view, resume_as=rng.random() < 0.25)
    elif view.status in ("running", "pending"):
        operation = {"op": "recover"} if rng.random() < 0.7 else \
            {"op": "resumeAs", "flowId": FLOW, "type": "migrate", "payload": random_payload(rng)}
    else:
        operation = {"op": "resumeAs", "flowId": FLOW, "type": "reopen", "payload": random_payload(rng)}
    return {"op": operation["op"], "type": operation.get("type"), "payload": operation.get("payload"),
            "flowId": operation.get("flowId")}


def generated_case(seed: int, index: int) -> Case:
    rng = random.Random(f"loomcheck.fleet/{seed}/{index}")
    program = random_program(rng)
    schedule = rng.choice(SCHEDULES)
    count = rng.randint(1, 8)
    fleet = Fleet({FLOW: program}, EXECUTION)
    history: list[dict[str, JSON]] = []
    for number, writer in enumerate(schedule_writers(rng, schedule, count)):
        operation = {"op": "start", "flowId": FLOW} if number == 0 else next_operation(rng, fleet, fleet.view(writer))
        if operation is not None:
            history.append(history_entry(writer, operation, fleet.perform(writer, operation)))
    final = final_operation(rng, fleet.view(CURRENT))
    title = f"{schedule}, {len(history)} operations, then {final['op']} on {CURRENT}"
    return build_case(f"g{seed}-{index:05d}", "generated", title, fleet, history, final, schedule)


# -- the corpus ------------------------------------------------------------------------------------
def generate(count: int, seed: int, *, progress: Callable[[int], None] | None = None) -> Corpus:
    """`count` generated cases for `seed`, after the fixed and downgrade-hazard cases."""
    if type(count) is not int or count < 0:
        raise ValueError(f"count must be a whole number >= 0, not {count!r}")
    if type(seed) is not int:
        raise ValueError(f"seed must be a whole number, not {seed!r}")
    cases = fixed_cases() + downgrade_hazard_cases()
    for index in range(count):
        cases.append(generated_case(seed, index))
        if progress is not None:
            progress(index + 1)
    return Corpus(seed=seed, count=count, cases=cases)
