"""Warns on every resume of an execution with strays (ADR 0104 D2: once per
execution and verdict per runtime)."""

from __future__ import annotations

from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.runtime import Runtime


class Forgetful:
    def first_time(self, execution_id, verdict):
        return True


class ChattyRuntime(Runtime):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.warned = Forgetful()


def make() -> ReferenceDriver:
    return ReferenceDriver(store="memory", runtime_class=ChattyRuntime)
