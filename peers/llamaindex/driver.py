"""The LlamaIndex Workflows adapter's driver: `loomcheck run --impl llamaindex`."""

from __future__ import annotations

from typing import Any

from loomcheck.peers.base import PeerDriver
from loomcheck.peers.llamaindex.glue import LlamaIndexSession
from loomcheck.spec.vocabulary import vocabulary


class LlamaIndexDriver(PeerDriver):
    peer = "LlamaIndex Workflows"
    distribution = "llama-index-workflows"
    features: list[str] = []

    def __init__(self) -> None:
        super().__init__(LlamaIndexSession(vocabulary().kernel_types))

    def translation(self) -> Any:
        from loomcheck.peers.llamaindex.template import LlamaIndexScript

        return LlamaIndexScript()


def make() -> LlamaIndexDriver:
    return LlamaIndexDriver()
