"""The DBOS Transact adapter's driver: `loomcheck run --impl dbos`; durable under
$LOOMCHECK_STORE_DIR when the harness sets it."""

from __future__ import annotations

import os
import sys
from typing import Any

from loomcheck.peers.base import RecoveringPeerDriver
from loomcheck.peers.dbos.glue import DbosSession
from loomcheck.spec.vocabulary import vocabulary

# The zygote: a new Python that imports the worker once and forks each worker from it.
ZYGOTE = [sys.executable, "-c", "import sys; from loomcheck.peers.dbos.worker import zygote_main; zygote_main(sys.argv[1])"]


class DbosDriver(RecoveringPeerDriver):
    peer = "dbos"
    distribution = "dbos"
    features = ["recover", "durable"]

    def __init__(self, directory: str | None = None) -> None:
        super().__init__(DbosSession(directory, vocabulary().kernel_types, ZYGOTE))

    def translation(self) -> Any:
        from loomcheck.peers.dbos.template import DbosScript

        return DbosScript()


def make() -> DbosDriver:
    """The driver; durable under $LOOMCHECK_STORE_DIR when the harness sets it."""
    return DbosDriver(os.environ.get("LOOMCHECK_STORE_DIR") or None)
