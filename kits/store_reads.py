"""The store kit's cases about a log once written: range reads, executions kept apart, snapshots,
retention, erasure and its incarnations, clear, and what survives a reopen."""

from __future__ import annotations

from typing import Any

import pytest

from loomcheck.kits.store_harness import StoreHarness
from loomcheck.kits.store_values import assert_events, assert_same_json
from loomcheck.reference.stores.base import StaleAppendError, StoreError


class ReadCases(StoreHarness):
    """Range reads, isolation, snapshots, retention, erase, clear and durability."""

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
