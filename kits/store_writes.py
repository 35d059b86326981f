"""The store kit's cases about appending: what is appended reads back exactly, what is no JSON
or stale is refused and appends nothing, and random appends match a model."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomcheck.kits.store_harness import StoreHarness
from loomcheck.kits.store_values import (
    NOT_JSON_VALUES, ROUND_TRIP_VALUES, assert_events, assert_same_json, json_values, unserialisable_cycle,
)
from loomcheck.reference.events import JSON
from loomcheck.reference.stores.base import StaleAppendError, StoreError


class WriteCases(StoreHarness):
    """Appends, refused appends, stale appends, and a model of random appends."""

    def test_append_then_read(self) -> None:
        """Appended events get seq 1..n, keep their types and payloads, and have id "<execution>:<seq>"."""
        store = self.store()
        entries = [("started", {"input": 1}), ("step", [1, 2]), ("finished", "ok")]
        written = store.append("exec-1", 1, entries)
        expected = [(1, "started", {"input": 1}), (2, "step", [1, 2]), (3, "finished", "ok")]
        assert_events(written, "exec-1", expected)
        assert_events(store.read("exec-1"), "exec-1", expected)
        assert [e.id for e in store.read("exec-1")] == ["exec-1:1", "exec-1:2", "exec-1:3"]
        assert store.next_seq("exec-1") == 4
        more = store.append("exec-1", 4, [("extra", None)])
        assert_events(more, "exec-1", [(4, "extra", None)])
        assert_events(store.read("exec-1"), "exec-1", expected + [(4, "extra", None)])

    def test_unknown_execution_is_empty(self) -> None:
        """An execution nobody wrote has next_seq 1, no events, no snapshot, and is not listed."""
        store = self.store()
        assert store.next_seq("nobody") == 1
        assert store.read("nobody") == []
        assert store.read("nobody", after=3, upto=7) == []
        assert store.get_snapshot("nobody") is None
        assert store.executions() == []

    @pytest.mark.parametrize("value", [v for _, v in ROUND_TRIP_VALUES], ids=[i for i, _ in ROUND_TRIP_VALUES])
    def test_json_payload_round_trips(self, value: JSON) -> None:
        """Every JSON value comes back exactly, null as None (ADR 0104 D1), from append and from read."""
        store = self.store()
        written = store.append("x", 1, [("before", 1), ("value", value), ("after", 2)])
        expected = [(1, "before", 1), (2, "value", value), (3, "after", 2)]
        assert_events(written, "x", expected)
        assert_events(store.read("x"), "x", expected)
        assert_events(store.read("x", after=1, upto=2), "x", [(2, "value", value)])

    def test_event_types_round_trip(self) -> None:
        """Event types are kept exactly, whatever their characters."""
        store = self.store()
        types = ["", "a.b/c", "ünï 😀", "with space", "null", "1"]
        store.append("x", 1, [(t, None) for t in types])
        assert [e.type for e in store.read("x")] == types

    def test_payloads_are_copies(self) -> None:
        """Stores keep JSON text: mutating a payload after append, or a payload read back, changes nothing stored."""
        store = self.store()
        payload: dict[str, Any] = {"list": [1], "obj": {"k": "v"}}
        written = store.append("x", 1, [("t", payload)])
        payload["list"].append(2)
        payload["obj"]["k"] = "changed"
        written[0].payload["list"].append(3)
        store.read("x")[0].payload["obj"]["new"] = True
        assert_same_json(store.read("x")[0].payload, {"list": [1], "obj": {"k": "v"}})

    @pytest.mark.parametrize("bad", [v for _, v in NOT_JSON_VALUES], ids=[i for i, _ in NOT_JSON_VALUES])
    def test_non_json_payload_refused(self, bad: Any) -> None:
        """A payload with no exact JSON form is refused with StoreError and nothing is appended."""
        store = self.store()
        store.append("x", 1, [("existing", {"keep": True})])
        self.assert_refused_without_effect(store, "x", 2, [("bad", bad)])
        self.assert_refused_without_effect(store, "fresh", 1, [("bad", bad)])

    @pytest.mark.parametrize("bad", [v for _, v in NOT_JSON_VALUES], ids=[i for i, _ in NOT_JSON_VALUES])
    def test_multi_entry_append_is_all_or_nothing(self, bad: Any) -> None:
        """When the 2nd entry of a multi-entry append is not JSON, not even the 1st is appended."""
        store = self.store()
        store.append("x", 1, [("existing", 1)])
        self.assert_refused_without_effect(store, "x", 2, [("good", 2), ("bad", bad), ("good", 3)])
        self.assert_refused_without_effect(store, "fresh", 1, [("good", 1), ("bad", bad)])
        assert_events(store.append("x", 2, [("good", 2)]), "x", [(2, "good", 2)])

    def test_cyclic_payload_refused(self) -> None:
        """A self-containing payload is refused with StoreError (promptly, not by hanging)."""
        store = self.store()
        self.assert_refused_without_effect(store, "x", 1, [("good", 1), ("bad", unserialisable_cycle())])

    def test_int_key_inside_tuple_refused(self) -> None:
        """Non-string object keys are refused wherever they are, also inside a tuple (which JSON writes as an array)."""
        store = self.store()
        self.assert_refused_without_effect(store, "x", 1, [("bad", {"a": ({1: "one"},)})])

    def test_lone_surrogate_refused(self) -> None:
        """A string with a lone surrogate is not Unicode text a durable store can write, so every store refuses it."""
        store = self.store()
        self.assert_refused_without_effect(store, "x", 1, [("good", "ok"), ("bad", "a\ud800b")])
        self.assert_refused_without_effect(store, "x", 1, [("bad-\udfff", None)])

    def test_non_string_event_type_refused(self) -> None:
        """An event type that is not a string is refused: a store would otherwise hand back "5" for 5."""
        store = self.store()
        self.assert_refused_without_effect(store, "x", 1, [("good", 1), (5, None)])
        self.assert_refused_without_effect(store, "x", 1, [(None, None)])

    def test_non_json_snapshot_refused(self) -> None:
        """A snapshot state with no exact JSON form is refused with StoreError and nothing is stored."""
        store = self.store()
        with pytest.raises(StoreError):
            store.put_snapshot("x", 3, {"bad": math.nan})
        with pytest.raises(StoreError):
            store.put_snapshot("x", 3, {1: "int key"})  # type: ignore[dict-item]
        assert store.get_snapshot("x") is None
        assert store.next_seq("x") == 1
        assert store.executions() == []

    @pytest.mark.parametrize("expected_seq", [1, 2, 3, 5, 6, 100, 0, -1])
    def test_stale_append_refused(self, expected_seq: int) -> None:
        """An append whose expected_seq is already used, or beyond the next, raises StaleAppendError
        (with .expected, .actual) and leaves the log unchanged."""
        store = self.store()
        store.append("x", 1, [("a", 1), ("b", 2), ("c", 3)])
        before = store.read("x")
        with pytest.raises(StaleAppendError) as caught:
            store.append("x", expected_seq, [("late", None)])
        assert caught.value.expected == expected_seq
        assert caught.value.actual == 4
        assert caught.value.execution_id == "x"
        assert store.read("x") == before
        assert store.next_seq("x") == 4

    def test_stale_append_to_unknown_execution_refused(self) -> None:
        """The first append to an execution must expect seq 1."""
        store = self.store()
        with pytest.raises(StaleAppendError) as caught:
            store.append("new", 2, [("a", 1)])
        assert (caught.value.expected, caught.value.actual) == (2, 1)
        assert store.read("new") == []
        assert store.executions() == []

    def test_empty_append_writes_nothing(self) -> None:
        """Appending no entries returns [], is still checked for staleness, and creates no execution."""
        store = self.store()
        assert store.append("x", 1, []) == []
        assert store.next_seq("x") == 1
        assert store.read("x") == []
        assert store.executions() == []
        with pytest.raises(StaleAppendError):
            store.append("x", 2, [])

    def test_second_writer_on_same_backing_refused_when_stale(self) -> None:
        """Two store objects on one durable backing: the one whose expected_seq went stale is refused
        (durable stores only)."""
        first = self.store()
        second = self.reopened(first)
        assert_events(first.append("x", 1, [("a", 1), ("b", 2)]), "x", [(1, "a", 1), (2, "b", 2)])
        assert second.next_seq("x") == 3
        with pytest.raises(StaleAppendError) as caught:
            second.append("x", 1, [("stale", None)])
        assert (caught.value.expected, caught.value.actual) == (1, 3)
        assert_events(second.append("x", 3, [("c", 3)]), "x", [(3, "c", 3)])
        with pytest.raises(StaleAppendError) as caught:
            first.append("x", 3, [("stale", None)])
        assert (caught.value.expected, caught.value.actual) == (3, 4)
        expected = [(1, "a", 1), (2, "b", 2), (3, "c", 3)]
        assert_events(first.read("x"), "x", expected)
        assert_events(second.read("x"), "x", expected)

    _MODEL_IDS = ("a", "ab", "a%")

    # Each example makes (and closes) its own store and uses nothing else from `self`, so the
    # several subclasses that share this method (Hypothesis's "executors") cannot make it flaky.
    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.differing_executors])
    @given(
        ops=st.lists(
            st.tuples(
                st.sampled_from(_MODEL_IDS),
                st.sampled_from(["ok", "ok", "ok", "stale-used", "stale-ahead", "bad"]),
                st.lists(st.tuples(st.sampled_from(["s", "t", "u"]), json_values()), min_size=1, max_size=3),
                st.integers(min_value=0, max_value=3),
            ),
            max_size=25,
        )
    )
    def test_random_appends_match_model(self, ops: list[tuple[str, str, list[tuple[str, JSON]], int]]) -> None:
        """For random appends over a few executions, some stale and some with a non-JSON payload,
        each execution's log is exactly the model list of accepted events."""
        store = self.make_store()
        model: dict[str, list[tuple[int, str, JSON]]] = {}
        try:
            for execution_id, kind, entries, where in ops:
                log = model.setdefault(execution_id, [])
                next_seq = len(log) + 1
                if kind == "bad":
                    bad_entries: list[tuple[str, Any]] = list(entries)
                    bad_entries.insert(where % (len(entries) + 1), ("bad", math.nan))
                    with pytest.raises(StoreError) as caught:
                        store.append(execution_id, next_seq, bad_entries)
                    assert not isinstance(caught.value, StaleAppendError)
                elif kind.startswith("stale"):
                    expected = next_seq - 1 - where if kind == "stale-used" else next_seq + 1 + where
                    with pytest.raises(StaleAppendError) as stale:
                        store.append(execution_id, expected, entries)
                    assert (stale.value.expected, stale.value.actual) == (expected, next_seq)
                else:
                    written = store.append(execution_id, next_seq, entries)
                    accepted = [(next_seq + i, t, p) for i, (t, p) in enumerate(entries)]
                    assert_events(written, execution_id, accepted)
                    log.extend(accepted)
                assert store.next_seq(execution_id) == len(log) + 1
            for execution_id in self._MODEL_IDS:
                assert_events(store.read(execution_id), execution_id, model.get(execution_id, []))
            assert store.executions() == sorted(e for e, log in model.items() if log)
        finally:
            store.close()
