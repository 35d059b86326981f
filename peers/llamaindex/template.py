"""The LlamaIndex Workflows reproducer template: a script renders the adapter's glue (glue.py),
its event loop and walker thread included, and makes its session."""

from __future__ import annotations

from loomcheck.peers.reproducer import Translation


class LlamaIndexScript(Translation):
    peer = "LlamaIndex Workflows"
    install = "pip install llama-index-workflows"
    modules = ("loomcheck.peers.llamaindex.glue",)
    session = "LlamaIndexSession(kernel_types=KERNEL_TYPES)"
    calls = ("start", "resume")
