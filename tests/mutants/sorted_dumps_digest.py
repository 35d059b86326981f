"""The gate's digest is computed over `json.dumps(view, sort_keys=True)`, Python's
default spelling (spaces after separators, \\u-escapes, code-point key order), not
the canonical JSON of spec/canonical-json.md: a JavaScript UI recomputing the
digest from what it renders would never match (ADR 0117 D1)."""

from __future__ import annotations

import hashlib
import json

from loomcheck.reference.context import FlowContext
from loomcheck.reference.driver import ReferenceDriver


class PythonDigestContext(FlowContext):
    @staticmethod
    def digest_of(view) -> str:
        return "v2:" + hashlib.sha256(json.dumps(view, sort_keys=True).encode()).hexdigest()


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", context_class=PythonDigestContext)
