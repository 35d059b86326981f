"""The store conformance kit: the pytest battery every `EventStore` must pass. Subclass
`StoreConformance` as ``Test<Something>`` and give `make_store` (and, for a durable store,
`reopen_store`): docs/stores.md, "The conformance kit"."""

from __future__ import annotations

from loomcheck.kits.store_reads import ReadCases
from loomcheck.kits.store_writes import WriteCases

__all__ = ["StoreConformance"]


class StoreConformance(WriteCases, ReadCases):
    """Every case of the kit, one test method each, its docstring the rule it checks."""
