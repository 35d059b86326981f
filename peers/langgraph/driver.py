"""The LangGraph adapter's driver: `loomcheck run --impl langgraph` (guarded) or `langgraph-raw`."""

from __future__ import annotations

from typing import Any

from loomcheck.peers.base import RecoveringPeerDriver
from loomcheck.peers.langgraph.glue import LangGraphSession
from loomcheck.spec.vocabulary import vocabulary


class LangGraphDriver(RecoveringPeerDriver):
    peer = "LangGraph"
    distribution = "langgraph"
    features = ["recover"]

    def __init__(self, guarded: bool = True) -> None:
        super().__init__(LangGraphSession(guarded, vocabulary().kernel_types))

    def translation(self) -> Any:
        from loomcheck.peers.langgraph.template import LangGraphScript

        return LangGraphScript(guarded=self.session.guarded is True)


def make() -> LangGraphDriver:
    """Guarded: the integration's own checks before an answer (docs/peers.md)."""
    return LangGraphDriver()


def make_raw() -> LangGraphDriver:
    """Every call straight through to LangGraph."""
    return LangGraphDriver(guarded=False)
