"""Pre-0104 recovery (mutants/recovery_resumes.py) in a durable kernel: killed
for real in the middle of a step, it recovers with EXECUTION_RESUMED {}, and the
next gate passes with that {} instead of the answer sent to it."""

from __future__ import annotations

import os

from loomcheck.reference.driver import ReferenceDriver
from mutants.recovery_resumes import ResumingRecovery


def make() -> ReferenceDriver:
    return ReferenceDriver(store="sqlite", directory=os.environ.get("LOOMCHECK_STORE_DIR") or None,
                           runtime_class=ResumingRecovery)
