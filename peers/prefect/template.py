"""The Prefect reproducer template: a script renders the adapter's glue (its private server, then
the flow runs) and makes its session in the run's mode; like the adapter, the script starts its
own Prefect server on loopback and is the deployment's worker."""

from __future__ import annotations

from loomcheck.peers.reproducer import Translation


class PrefectScript(Translation):
    install = "pip install prefect"
    modules = ("loomcheck.peers.prefect.server", "loomcheck.peers.prefect.glue")
    calls = ("start", "resume", "recover", "recover_abandoned")

    def __init__(self, guarded: bool) -> None:
        self.peer = "Prefect" + ("" if guarded else " (raw: no integration checks before an answer)")
        self.session = f"PrefectSession(guarded={guarded!r}, kernel_types=KERNEL_TYPES)"
