"""The LangGraph reproducer template: a script renders the adapter's glue (glue.py) and makes
its session in the run's mode."""

from __future__ import annotations

from loomcheck.peers.reproducer import Translation


class LangGraphScript(Translation):
    install = "pip install langgraph langgraph-checkpoint-sqlite"
    modules = ("loomcheck.peers.langgraph.glue",)
    calls = ("start", "resume", "recover", "recover_abandoned")

    def __init__(self, guarded: bool) -> None:
        self.peer = "LangGraph" + ("" if guarded else " (raw: no integration checks before an answer)")
        self.session = f"LangGraphSession(guarded={guarded!r}, kernel_types=KERNEL_TYPES)"
