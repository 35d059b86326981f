"""Event stores behind one interface (`EventStore`): in-memory for speed in
tests, SQLite as the embedded default. `kit.py` is the conformance battery any
store, ours or a third party's, can be run against."""

from loomcheck.reference.stores.base import EventStore, StaleAppendError, StoreError

__all__ = ["EventStore", "StaleAppendError", "StoreError"]
