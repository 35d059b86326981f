"""Adapters that run the suite on other durable-execution libraries ("peers").

Each adapter translates flow programs into the peer's own primitives: one
generic workflow body (walker.py) that walks the program and calls the peer's
step and gate API, with the peer's own store. The peer is an optional
dependency, installed with its extra: `pip install 'loomcheck[langgraph]'`.

    loomcheck run --impl langgraph

What each adapter maps, what it cannot, and what the suite found is in
results/peers/<peer>/ (ANALYSIS.md beside the report) and docs/peers.md.
"""

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
    guarded: bool = False  # the adapter checks answers itself before the peer sees them (base.py)


PEERS: dict[str, PeerInfo] = {
    "langgraph": PeerInfo("langgraph", "python:loomcheck.peers.langgraph:make", "langgraph",
                          ("langgraph", "langgraph.checkpoint.sqlite"), "manifests/langgraph.toml", guarded=True),
    "langgraph-raw": PeerInfo("langgraph-raw", "python:loomcheck.peers.langgraph:make_raw", "langgraph",
                              ("langgraph", "langgraph.checkpoint.sqlite"), "manifests/langgraph-raw.toml"),
    "llamaindex": PeerInfo("llamaindex", "python:loomcheck.peers.llamaindex:make", "llamaindex",
                           ("workflows",), "manifests/llamaindex.toml"),
    "dbos": PeerInfo("dbos", "python:loomcheck.peers.dbos:make", "dbos", ("dbos",), "manifests/dbos.toml"),
    "prefect": PeerInfo("prefect", "python:loomcheck.peers.prefect:make", "prefect", ("prefect",),
                        "manifests/prefect.toml", guarded=True),
    "prefect-raw": PeerInfo("prefect-raw", "python:loomcheck.peers.prefect:make_raw", "prefect", ("prefect",),
                            "manifests/prefect-raw.toml"),
}


def peer_manifest(impl: str) -> Path | None:
    """The manifest shipped with a peer adapter (`--impl langgraph`), or None."""
    peer = PEERS.get(impl)
    if peer is None:
        return None
    return Path(str(files("loomcheck.peers") / peer.manifest))
