"""The gate's digest is cut to 64 bits, "v2:" and 16 hex digits: the first cut's FNV v1: in
SHA-256's clothes, which a proposal-choosing adversary could collide (ADR 0117 D1)."""

from __future__ import annotations

import hashlib

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.spec.canonical import canonical_json


class ShortDigestContext(FlowContext):
    @staticmethod
    def digest_of(view) -> str:
        return "v2:" + hashlib.sha256(canonical_json(view).encode("utf-8")).hexdigest()[:16]


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=ShortDigestContext)
