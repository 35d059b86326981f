"""A kernel whose authenticator follows ADR 0117 D2 and nothing more: the reference with the
operation and the incarnation (spec/signing.md section 10) left out of what it verifies, and no
"operation-binding" declared. It is ADR-conformant, so the extension must cost it nothing but a
profile disagreement (tests/test_operation_binding.py)."""

from __future__ import annotations

from typing import Any

from loomcheck.contract.driver import Hello
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class AdrOnlyRuntime(Runtime):
    def authenticate(self, execution_id, state, events, event_type, answer, options, operation=None):
        return super().authenticate(execution_id, state, events, event_type, answer, options, None)

    def incarnation(self, execution_id: str) -> int:
        return 1  # D2 binds the execution's id and its park, not which execution holds the id


class AdrOnlyDriver(ReferenceDriver):
    def hello(self) -> Hello:
        hello = super().hello()
        return hello.model_copy(update={"features": [f for f in hello.features if f != "operation-binding"]})


def make() -> Any:
    return AdrOnlyDriver(store="memory", runtime_class=AdrOnlyRuntime)
