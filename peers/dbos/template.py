"""The DBOS Transact reproducer template: a script renders the adapter's glue (records, processes,
worker, glue) and makes its session. As in the adapter, the DBOS application runs in a worker
process forked from a zygote; the zygote is the script itself, re-run with `--dbos-zygote STORE`,
so a crash fault is a real process death and recovery DBOS's own `DBOS.launch()`."""

from __future__ import annotations

from loomcheck.peers.reproducer import Translation


class DbosScript(Translation):
    peer = "DBOS Transact"
    install = "pip install dbos"
    modules = ("loomcheck.peers.dbos.records", "loomcheck.peers.dbos.processes", "loomcheck.peers.dbos.worker",
               "loomcheck.peers.dbos.glue")
    session = "DbosSession(None, KERNEL_TYPES, [sys.executable, os.path.abspath(__file__), '--dbos-zygote'])"
    calls = ("start", "resume", "recover", "recover_abandoned")

    def entry(self) -> list[str]:
        return ["if sys.argv[1:2] == ['--dbos-zygote']:  # this script, re-run as the zygote: it forks the workers",
                "    zygote_main(sys.argv[2])  # never returns"]
