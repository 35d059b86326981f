"""The store conformance kit: the pytest battery every `EventStore` must pass.

Run it against your own store by subclassing `StoreConformance` in a test module
(the class name must start with ``Test`` so that pytest collects it)::

    from loomcheck.kits.stores import StoreConformance

    class TestMyStore(StoreConformance):
        def make_store(self):
            return MyStore()

`make_store` must return a new, empty store each time it is called. If your
store is durable, also override `reopen_store` to return a *new* store object on
the same backing as the one given (same file, same database), even after that
one was closed; the cases about a second writer and about surviving a close run
only then, and are skipped otherwise::

        def reopen_store(self, store):
            return MyStore(store.path)

Every case is one test method whose docstring names the rule it checks. The
kit closes every store it made or reopened when each test ends.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomcheck.reference.events import JSON, Event
from loomcheck.reference.stores.base import EventStore, StaleAppendError, StoreError

__all__ = ["StoreConformance", "assert_same_json", "json_values"]


def assert_same_json(actual: JSON, expected: JSON, where: str = "payload") -> None:
    """Equal *and* of the same JSON kinds all the way down: `==` alone would let a
    store hand back 1 for True or 1 for 1.0, which is not what it was given."""
    assert type(actual) is type(expected), f"{where}: got {actual!r} ({type(actual).__name__}), expected {expected!r}"
    if isinstance(expected, dict):
        assert set(actual) == set(expected), f"{where}: keys {sorted(actual)} != {sorted(expected)}"
        for key, value in expected.items():
            assert_same_json(actual[key], value, f"{where}[{key!r}]")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            assert_same_json(got, want, f"{where}[{index}]")
    else:
        assert actual == expected, f"{where}: got {actual!r}, expected {expected!r}"


def assert_events(actual: list[Event], execution_id: str, expected: list[tuple[int, str, JSON]]) -> None:
    """`actual` is exactly the events `(seq, type, payload)` of `execution_id`, in order."""
    assert [(e.execution_id, e.seq, e.type) for e in actual] == [(execution_id, s, t) for s, t, _ in expected]
    for event, (seq, _, payload) in zip(actual, expected):
        assert isinstance(event, Event), f"{event!r} is not an Event"
        assert event.id == f"{execution_id}:{seq}"
        assert_same_json(event.payload, payload, f"{event.id} payload")


def json_values(max_leaves: int = 6) -> st.SearchStrategy[JSON]:
    """Hypothesis strategy for JSON values as stores must accept them."""
    leaves = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**53), max_value=2**53)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8)
    )
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=max_leaves,
    )


class _Opaque:
    """An object json cannot serialise."""


def _cycle() -> list[Any]:
    value: list[Any] = []
    value.append({"self": value})
    return value


# Values every store must keep exactly: (pytest id, value).
ROUND_TRIP_VALUES: list[tuple[str, JSON]] = [
    ("null", None),
    ("empty-object", {}),
    ("empty-array", []),
    ("empty-string", ""),
    ("zero", 0),
    ("false", False),
    ("true", True),
    ("float-one", 1.0),
    ("float-tenth", 0.1),
    ("float-huge", 1e300),
    ("float-tiny", -2.5e-300),
    ("int-2^53", 2**53),
    ("int-minus-2^53", -(2**53)),
    ("int-2^53-1", 2**53 - 1),
    ("null-in-array", [None, None]),
    ("null-in-object", {"a": None}),
    ("nested", {"a": [1, {"b": [None, True, "x", {"c": {}}]}], "d": {"e": [[], [[]]]}}),
    ("unicode-bmp", "héllo wörld ünïcode 世界 ✓"),
    ("unicode-astral", "𝄞 😀 𠜎 \U0010ffff"),
    ("nul-char", "a\x00b\x00"),
    ("control-chars", "\t\n\r\x01\x1f\x7f\u2028\u2029"),
    ("unicode-keys", {"ключ": 1, "😀": [2], "\x00": "nul key", "": "empty key"}),
    ("json-lookalike-string", '{"a": null}'),
    ("string-null", "null"),
]

# Values no store may accept: (pytest id, value).
NOT_JSON_VALUES: list[tuple[str, Any]] = [
    ("nan", math.nan),
    ("inf", math.inf),
    ("minus-inf", -math.inf),
    ("nan-nested", {"a": [1, math.nan]}),
    ("set", {1, 2}),
    ("int-keyed-dict", {1: "one"}),
    ("int-key-nested", {"a": [{"b": {2: "two"}}]}),
    ("tuple-keyed-dict", {(1, 2): "pair"}),
    ("object", _Opaque()),
    ("bytes", b"bytes"),
]


class StoreConformance:
    """Subclass as ``Test<Something>`` and implement `make_store`. See the module docstring."""

    # ----------------------------------------------------------- to override

    def make_store(self) -> EventStore:
        """A new, empty store. Must be overridden."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_store()")

    def reopen_store(self, store: EventStore) -> EventStore | None:
        """A new store object on the same durable backing as `store` (which may be
        closed by then), or None if stores are not durable."""
        return None

    # --------------------------------------------------------------- helpers

    @pytest.fixture(autouse=True)
    def _close_made_stores(self) -> Iterator[None]:
        """Close whatever a test made, even when it fails, so files and
        connections do not pile up over the session."""
        self._made: list[EventStore] = []
        yield
        while self._made:
            try:
                self._made.pop().close()
            except StoreError:
                pass

    def store(self) -> EventStore:
        """`make_store()`, remembered so it is closed after the test."""
        made = self.make_store()
        self._made.append(made)
        return made

    def reopened(self, store: EventStore) -> EventStore:
        """`reopen_store(store)`, skipping the test when the store is not durable."""
        other = self.reopen_store(store)
        if other is None:
            pytest.skip("durable-only case: reopen_store() returns None, so this store is treated as not durable")
        self._made.append(other)
        return other

    @staticmethod
    def log_state(store: EventStore, execution_id: str) -> tuple[int, list[Event]]:
        return store.next_seq(execution_id), store.read(execution_id)

    def assert_refused_without_effect(self, store: EventStore, execution_id: str, expected_seq: int,
                                      entries: list[tuple[Any, Any]]) -> StoreError:
        """The append raises a StoreError that is not a StaleAppendError, and the
        log (next_seq and read) is exactly as before."""
        before_seq, before = self.log_state(store, execution_id)
        before_executions = store.executions()
        with pytest.raises(StoreError) as caught:
            store.append(execution_id, expected_seq, entries)
        assert not isinstance(caught.value, StaleAppendError), f"refused as stale, not as bad input: {caught.value}"
        after_seq, after = self.log_state(store, execution_id)
        assert after_seq == before_seq, "a refused append moved next_seq"
        assert after == before, "a refused append changed the log"
        assert store.executions() == before_executions, "a refused append changed executions()"
        return caught.value

    # --------------------------------------------------------- append / read

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

    # ------------------------------------------------------ refused payloads

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
        self.assert_refused_without_effect(store, "x", 1, [("good", 1), ("bad", _cycle())])

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

    # ---------------------------------------------------------- stale appends

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

    # ------------------------------------------------------------ range reads

    def test_range_reads(self) -> None:
        """read(x, after=k[, upto=m]) returns exactly the events with k < seq <= m, in order."""
        store = self.store()
        store.append("x", 1, [(f"t{i}", i) for i in range(1, 6)])

        def seqs(**kwargs: int) -> list[int]:
            events = store.read("x", **kwargs)
            for event in events:
                assert_same_json(event.payload, event.seq)
            return [event.seq for event in events]

        assert seqs() == [1, 2, 3, 4, 5]
        assert seqs(after=0) == [1, 2, 3, 4, 5]
        assert seqs(after=2) == [3, 4, 5]
        assert seqs(after=2, upto=4) == [3, 4]
        assert seqs(after=0, upto=1) == [1]
        assert seqs(after=4, upto=5) == [5]
        assert seqs(after=2, upto=99) == [3, 4, 5]
        assert seqs(after=5) == []
        assert seqs(after=99) == []
        assert seqs(after=99, upto=120) == []
        assert seqs(after=3, upto=3) == []
        assert seqs(after=4, upto=2) == []
        assert seqs(upto=0) == []
        assert seqs(after=-5, upto=2) == [1, 2]
        assert store.read("unknown", after=2) == []
        assert store.read("unknown", after=0, upto=5) == []

    # ------------------------------------------------------------- isolation

    ISOLATION_IDS: tuple[str, ...] = (
        "a", "ab", "abc", "b", "A", "a%", "%", "a_", "_", "'", '"', "a'b", 'a"b', "a;b", "a b", "a\\b",
        "ä", "a\u0308", "😀", "𝄞x", "exec:1", "exec:10",
    )

    def test_executions_are_isolated(self) -> None:
        """Each execution has its own log, including ids that are prefixes of each other or hold
        LIKE wildcards, quotes and non-ASCII characters."""
        store = self.store()
        ids = self.ISOLATION_IDS
        for n, execution_id in enumerate(ids, start=1):
            store.append(execution_id, 1, [(execution_id, [execution_id, i]) for i in range(n)])
        for n, execution_id in enumerate(ids, start=1):
            expected = [(i + 1, execution_id, [execution_id, i]) for i in range(n)]
            assert_events(store.read(execution_id), execution_id, expected)
            assert store.next_seq(execution_id) == n + 1
            assert_events(store.read(execution_id, after=n - 1), execution_id, expected[-1:])
        assert store.executions() == sorted(ids)

    # ------------------------------------------------------------- snapshots

    def test_executions_sorted_with_snapshot_only_ones(self) -> None:
        """executions() is sorted and lists executions that have only a snapshot."""
        store = self.store()
        store.append("m", 1, [("t", None)])
        store.put_snapshot("b", 4, {"folded": True})
        store.append("z", 1, [("t", None)])
        store.put_snapshot("m", 1, {})
        store.append("a", 1, [("t", None)])
        assert store.executions() == ["a", "b", "m", "z"]

    def test_snapshot_round_trips(self) -> None:
        """get_snapshot returns the seq and state put, exactly; a second put replaces the first."""
        store = self.store()
        state: dict[str, Any] = {"status": "running", "vars": {"n": 1, "none": None, "f": 1.5}, "log": [True, "😀"]}
        store.put_snapshot("x", 10, state)
        found = store.get_snapshot("x")
        assert found is not None
        assert found[0] == 10
        assert_same_json(found[1], state, "state")
        store.put_snapshot("x", 12, {"status": "done"})
        assert store.get_snapshot("x") == (12, {"status": "done"})
        assert store.get_snapshot("y") is None

    def test_append_after_snapshot(self) -> None:
        """After a snapshot at seq 10 with no events, next_seq is 11, the first event gets 11, and
        read returns only the events after the snapshot."""
        store = self.store()
        store.put_snapshot("x", 10, {"imported": True})
        assert store.next_seq("x") == 11
        assert store.read("x") == []
        with pytest.raises(StaleAppendError) as caught:
            store.append("x", 1, [("too-early", None)])
        assert (caught.value.expected, caught.value.actual) == (1, 11)
        assert_events(store.append("x", 11, [("a", 1), ("b", 2)]), "x", [(11, "a", 1), (12, "b", 2)])
        assert_events(store.read("x"), "x", [(11, "a", 1), (12, "b", 2)])
        assert_events(store.read("x", after=10), "x", [(11, "a", 1), (12, "b", 2)])
        assert_events(store.read("x", after=11), "x", [(12, "b", 2)])
        assert_events(store.read("x", after=0, upto=11), "x", [(11, "a", 1)])
        assert store.read("x", upto=10) == []
        assert store.next_seq("x") == 13

    # ------------------------------------------------------------- retention

    def test_truncate_prefix_keeps_snapshot_and_tail(self) -> None:
        """ADR 0104 D2 retention: the snapshot as of `upto`, the events after it, next_seq unchanged."""
        store = self.store()
        store.append("x", 1, [("a", 1), ("b", None), ("c", {"k": [1]})])
        store.append("y", 1, [("a", 1)])
        store.truncate_prefix("x", 2, {"sequence": 2, "variables": {"_resumePayloads": [{}]}})
        assert store.get_snapshot("x") == (2, {"sequence": 2, "variables": {"_resumePayloads": [{}]}})
        assert_events(store.read("x"), "x", [(3, "c", {"k": [1]})])
        assert store.read("x", upto=2) == []
        assert store.next_seq("x") == 4
        assert_events(store.read("y"), "y", [(1, "a", 1)])
        store.truncate_prefix("x", 3, {"sequence": 3})  # the whole log: the snapshot alone remains
        assert store.read("x") == [] and store.next_seq("x") == 4 and "x" in store.executions()
        assert_events(store.append("x", 4, [("d", 2)]), "x", [(4, "d", 2)])

    def test_truncate_beyond_the_log_refused(self) -> None:
        """Truncating past the last event is refused and changes nothing."""
        store = self.store()
        store.append("x", 1, [("a", 1)])
        for upto in (2, 10, -1):
            with pytest.raises(StoreError):
                store.truncate_prefix("x", upto, {"sequence": upto})
        assert_events(store.read("x"), "x", [(1, "a", 1)])
        assert store.get_snapshot("x") is None

    def test_erase_forgets_one_execution(self) -> None:
        """erase() removes one execution's events and snapshot; it can be re-created from seq 1."""
        store = self.store()
        store.append("x", 1, [("a", 1), ("b", 2)])
        store.put_snapshot("x", 1, {"k": 1})
        store.append("y", 1, [("a", 1)])
        store.erase("x")
        assert store.read("x") == [] and store.get_snapshot("x") is None and store.next_seq("x") == 1
        assert store.executions() == ["y"]
        assert_events(store.append("x", 1, [("again", None)]), "x", [(1, "again", None)])

    def test_erase_counts_incarnations_and_clear_forgets_them(self) -> None:
        """The execution re-created under an erased id is the id's next incarnation, which its
        approvals name (spec/signing.md section 10); other ids are untouched; clear() starts over."""
        store = self.store()
        store.append("x", 1, [("a", 1)])
        assert store.incarnation("x") == 1 and store.incarnation("never") == 1
        store.erase("x")
        assert store.incarnation("x") == 2
        store.append("x", 1, [("again", None)])
        store.erase("x")
        assert store.incarnation("x") == 3 and store.incarnation("y") == 1
        store.clear()
        assert store.incarnation("x") == 1

    def test_erasures_survive_reopening(self) -> None:
        """A restart must not hand the original's approvals to the re-created execution (durable stores only)."""
        first = self.store()
        first.append("x", 1, [("a", 1)])
        first.erase("x")
        assert self.reopened(first).incarnation("x") == 2

    # ----------------------------------------------------------------- clear

    def test_clear_forgets_everything(self) -> None:
        """After clear(), no execution, event or snapshot remains, and logs restart at seq 1."""
        store = self.store()
        store.append("x", 1, [("a", 1), ("b", 2)])
        store.append("y", 1, [("a", 1)])
        store.put_snapshot("s", 5, {"k": "v"})
        store.clear()
        assert store.executions() == []
        assert store.read("x") == []
        assert store.next_seq("x") == 1
        assert store.next_seq("s") == 1
        assert store.get_snapshot("s") is None
        assert_events(store.append("x", 1, [("again", None)]), "x", [(1, "again", None)])
        assert store.executions() == ["x"]

    # ---------------------------------------------------------------- model

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

    # ------------------------------------------------------------ durability

    def test_events_survive_reopen(self) -> None:
        """Events and snapshots appended, store closed, store reopened: all there, and appends
        continue from the right seq (durable stores only)."""
        store = self.store()
        entries = [("a", None), ("b", {"n": [1, 2]}), ("c", "😀\x00")]
        store.append("x", 1, entries)
        store.put_snapshot("s", 7, {"k": None})
        store.close()
        again = self.reopened(store)
        assert_events(again.read("x"), "x", [(i + 1, t, p) for i, (t, p) in enumerate(entries)])
        assert again.get_snapshot("s") == (7, {"k": None})
        assert again.executions() == ["s", "x"]
        assert again.next_seq("x") == 4
        assert again.next_seq("s") == 8
        assert_events(again.append("x", 4, [("d", 4)]), "x", [(4, "d", 4)])
