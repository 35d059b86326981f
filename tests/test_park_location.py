"""ADR 0117 Round 2, in the reference: the park an approval is bound to is found
exactly, among the events in hand or by a walk back in 64-event range reads, with
no whole-log read and no bound on how many events trail it; never the tip."""

from __future__ import annotations

from typing import Any

import pytest

from loomcheck.reference.runtime import PARK_WALK, Runtime
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.spec.programs import FlowProgram


class CountingStore(InMemoryEventStore):
    """Records every read: (after, upto)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[tuple[int, int | None]] = []

    def read(self, execution_id: str, after: int = 0, upto: int | None = None) -> Any:
        self.reads.append((after, upto))
        return super().read(execution_id, after, upto)


def parked_log(store: CountingStore, trailing: int) -> None:
    """STARTED, SUSPENDED at #2, then `trailing` audit entries (denials trail a park)."""
    entries = [("EXECUTION_STARTED", {"flowId": "f", "input": None}),
               ("EXECUTION_SUSPENDED", {"condition": {"on": "approve"}})]
    entries += [("EFFECT_DENIED", {"n": n}) for n in range(trailing)]
    store.append("x", 1, entries)


def runtime(store: CountingStore) -> Runtime:
    rt = Runtime(store)
    rt.register("f", FlowProgram.model_validate({"body": [{"op": "suspend", "on": "approve"}]}))
    return rt


@pytest.mark.parametrize("trailing", [0, 1, 63, 64, 65, 300])
def test_the_park_is_found_among_the_events_in_hand(trailing: int) -> None:
    store = CountingStore()
    parked_log(store, trailing)
    assert runtime(store).parked_at_sequence("x") == 2  # never the tip, 2 + trailing


@pytest.mark.parametrize("trailing", [70, 200, 1000])
def test_behind_a_snapshot_the_walk_reads_64_event_ranges(trailing: int) -> None:
    store = CountingStore()
    parked_log(store, trailing)
    rt = runtime(store)
    tip = 2 + trailing
    state = rt.state("x").to_json()
    store.put_snapshot("x", tip, {**state, "sequence": tip})
    store.reads.clear()
    assert rt.parked_at_sequence("x") == 2
    walks = [(after, upto) for after, upto in store.reads if upto is not None]
    assert walks, "the park behind the snapshot must be found by range reads"
    assert all(upto - after <= PARK_WALK for after, upto in walks), walks  # no whole-log read
    assert all(after > 0 or upto is not None for after, upto in store.reads)
    assert len(walks) == -(-(tip - 1) // PARK_WALK)  # ceil: the ranges below the snapshot, newest first


def test_a_park_retention_removed_is_not_located() -> None:
    store = CountingStore()
    state = {"sequence": 5, "status": "suspended", "flowId": "f", "suspendedOn": {"on": "approve"},
             "variables": {"_input": None, "_resumePayloads": []}, "steps": {}}
    store.put_snapshot("x", 5, state)
    store.append("x", 6, [("app.note", {"after": "the snapshot"})])
    assert runtime(store).parked_at_sequence("x") is None


def test_an_unparked_execution_has_no_park() -> None:
    store = CountingStore()
    store.append("x", 1, [("EXECUTION_STARTED", {"flowId": "f", "input": None})])
    assert runtime(store).parked_at_sequence("x") is None
