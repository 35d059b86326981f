"""What the store kit's cases share: the store under test, made and reopened through the
subclass's `make_store` and `reopen_store`, closed when each test ends, and the assertion that
a refused append changed nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from loomcheck.reference.events import Event
from loomcheck.reference.stores.base import EventStore, StaleAppendError, StoreError


class StoreHarness:
    """The base of the store kit's cases: `make_store` (and `reopen_store`) are the subclass's."""

    def make_store(self) -> EventStore:
        """A new, empty store. Must be overridden."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_store()")

    def reopen_store(self, store: EventStore) -> EventStore | None:
        """A new store object on the same durable backing as `store` (which may be
        closed by then), or None if stores are not durable."""
        return None

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
