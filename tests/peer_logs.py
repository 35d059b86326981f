"""Reading a peer adapter's witnessed log in the peer fidelity tests (tests/test_peer_*.py)."""

from __future__ import annotations

from typing import Any


def types(driver: Any, execution: str = "x") -> list[str]:
    """The event types of the execution's log, in order."""
    return [e["type"] for e in driver.read_log(execution)]


def observed(driver: Any, execution: str = "x") -> list[Any]:
    """What each gate was seen to receive: the payloads of the program's observe events."""
    return [e["payload"] for e in driver.read_log(execution) if e["type"] == "loomcheck.observed"]
