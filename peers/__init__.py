"""Adapters that run the suite on other durable-execution libraries ("peers"), one folder per peer
(driver, glue, reproducer template, manifests, NOTES.md) on the shared witness, walker and session.
The peer is an optional dependency: `pip install 'loomcheck[langgraph]'`, then
`loomcheck run --impl langgraph`. How they work: docs/peers.md."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path


@dataclass(frozen=True)
class PeerInfo:
    name: str          # the --impl name
    target: str        # python:MODULE:FACTORY
    extra: str         # pip install 'loomcheck[<extra>]'
    requires: tuple[str, ...]  # the modules the adapter imports
    manifest: str      # the peer's manifest, inside this package
    guarded: bool = False  # the adapter checks answers itself before the peer sees them (session.py)
    profile: str = "ci"    # the profile its committed run uses (a slow library has its own)


PEERS: dict[str, PeerInfo] = {
    "langgraph": PeerInfo("langgraph", "python:loomcheck.peers.langgraph.driver:make", "langgraph",
                          ("langgraph", "langgraph.checkpoint.sqlite"), "langgraph/langgraph.toml", guarded=True),
    "langgraph-raw": PeerInfo("langgraph-raw", "python:loomcheck.peers.langgraph.driver:make_raw", "langgraph",
                              ("langgraph", "langgraph.checkpoint.sqlite"), "langgraph/langgraph-raw.toml"),
    "llamaindex": PeerInfo("llamaindex", "python:loomcheck.peers.llamaindex.driver:make", "llamaindex",
                           ("workflows",), "llamaindex/llamaindex.toml"),
    "dbos": PeerInfo("dbos", "python:loomcheck.peers.dbos.driver:make", "dbos", ("dbos",), "dbos/dbos.toml"),
    "prefect": PeerInfo("prefect", "python:loomcheck.peers.prefect.driver:make", "prefect", ("prefect",),
                        "prefect/prefect.toml", guarded=True, profile="peers-slow"),
    "prefect-raw": PeerInfo("prefect-raw", "python:loomcheck.peers.prefect.driver:make_raw", "prefect", ("prefect",),
                            "prefect/prefect-raw.toml", profile="peers-slow"),
}


def peer_manifest(impl: str) -> Path | None:
    """The manifest shipped with a peer adapter (`--impl langgraph`), or None."""
    peer = PEERS.get(impl)
    if peer is None:
        return None
    return Path(str(files("loomcheck.peers") / peer.manifest))
