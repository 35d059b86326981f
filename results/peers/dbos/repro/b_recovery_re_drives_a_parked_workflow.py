"""DBOS behaviour B: recovery is launch-wide, and re-drives parked workflows too
(ADR 0104 D4: a recovery of a parked execution is refused; only a resume naming its gate
re-drives it).

Runs with DBOS alone: pip install dbos; python b_recovery_re_drives_a_parked_workflow.py
Exit status 1 while DBOS behaves so; 0 once it does not.

A first process starts a workflow that parks on gate go1 (DBOS.recv), then dies. A second
process launches DBOS on the same database: its launch recovery re-runs every PENDING
workflow, the parked one included (here harmlessly: it replays and blocks in the same recv).
There is no per-workflow recovery that could refuse a parked workflow. The workflow body
counts its runs in a file.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dbos import DBOS, SetWorkflowID

COVERS = {"dbos": ("recovery.skips-parked", "model.refines-gate-discipline")}

folder = Path(sys.argv[2]) if sys.argv[1:2] == ["--first"] else Path(tempfile.mkdtemp(prefix="dbos-repro-"))
runs = folder / "runs.txt"
DBOS(config={"name": "repro", "system_database_url": f"sqlite:///{folder / 'dbos.sqlite'}", "log_level": "WARNING",
             "application_version": "repro-1", "notification_listener_polling_interval_sec": 0.01})


@DBOS.workflow()
def one_gate():
    with runs.open("a") as out:
        out.write("run\n")  # not a step: it runs again whenever DBOS re-drives the workflow
    return DBOS.recv(topic="go1", timeout_seconds=600)


if sys.argv[1:2] == ["--first"]:
    DBOS.launch()
    with SetWorkflowID("x"):
        DBOS.start_workflow(one_gate)
    time.sleep(0.5)  # parked on go1
    os._exit(0)      # the process dies; the workflow stays PENDING in recv

subprocess.run([sys.executable, __file__, "--first", str(folder)], check=True)
before = runs.read_text().count("run")
DBOS.launch()    # the second process: DBOS's recovery of every PENDING workflow
deadline = time.monotonic() + 20  # its recovery queue is polled, so the re-drive takes a moment
while runs.read_text().count("run") == before and time.monotonic() < deadline:
    time.sleep(0.1)
after = runs.read_text().count("run")
DBOS.send("x", "done", topic="go1")
DBOS.retrieve_workflow("x").get_result()  # let it finish before DBOS shuts down
DBOS.destroy()

print("expected: the parked workflow is not re-driven by a recovery (ADR 0104 D4); it waits for its answer")
print(f"happened: its body ran {before} time(s) in the first process and {after - before} more at the second launch")
sys.exit(1 if after > before else 0)
