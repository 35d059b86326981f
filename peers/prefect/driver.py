"""The Prefect adapter's driver: `loomcheck run --impl prefect --profile peers-slow` (guarded) or
`prefect-raw`. Importing it starts nothing; making a driver starts the private server."""

from __future__ import annotations

from typing import Any

from loomcheck.peers.base import RecoveringPeerDriver
from loomcheck.peers.prefect.glue import PrefectSession
from loomcheck.spec.vocabulary import vocabulary


class PrefectDriver(RecoveringPeerDriver):
    peer = "Prefect"
    distribution = "prefect"
    features: list[str] = ["recover"]

    def __init__(self, guarded: bool = True) -> None:
        super().__init__(PrefectSession(guarded, vocabulary().kernel_types))

    def translation(self) -> Any:
        from loomcheck.peers.prefect.template import PrefectScript

        return PrefectScript(guarded=self.session.guarded is True)


def make() -> PrefectDriver:
    """Guarded (docs/peers.md): before an answer or a retry, the adapter checks what every Prefect
    integration checks for itself, from Prefect's own report of the flow run."""
    return PrefectDriver()


def make_raw() -> PrefectDriver:
    """Raw: every call goes straight to Prefect, whose ingress rules are judged."""
    return PrefectDriver(guarded=False)
