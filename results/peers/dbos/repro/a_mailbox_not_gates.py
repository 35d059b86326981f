"""DBOS behaviour A: a mailbox, not gates (ADR 0104 D1: an answer is accepted only while the
execution is parked at the gate it names; ADR 0057: gate i gets answer i; ADR 0104 D4).

Runs with DBOS alone: pip install dbos; python a_mailbox_not_gates.py
Exit status 1 while DBOS behaves so; 0 once it does not.

A workflow waits at gate go1 (DBOS.recv on topic "go1"), then at go2. While it is parked on go1:
- an answer meant for go2 is accepted (DBOS.send on topic "go2");
- so are an answer under a kernel event's name (EXECUTION_CANCELLED) and one named __proto__.
Then go1 is answered, and go2 passes at once with the answer sent before it was reached,
which nobody gave while it was parked. Finally, an answer to the finished workflow is accepted
too, and goes nowhere. Nothing is refused, so nothing has a typed reason.
"""

import sys
import tempfile
import time
from pathlib import Path

from dbos import DBOS, SetWorkflowID

COVERS = {"dbos": ("gate.i-receives-entry-i", "gate.beyond-answers-parks", "gate.completes-after-n-answers",
                   "fold.resume-payloads-ordered", "answer.one-suspend-point", "answer.addressed-while-parked",
                   "fold.null-resume-status-only", "refusal.append-nothing", "refusal.typed-reason",
                   "resume.kernel-namespace", "resume.not-suspended", "resume.gate-mismatch", "replay.step-runs-once",
                   "fold.matches-reference", "fold.key-safety")}

folder = Path(tempfile.mkdtemp(prefix="dbos-repro-"))
DBOS(config={"name": "repro", "system_database_url": f"sqlite:///{folder / 'dbos.sqlite'}", "log_level": "WARNING",
             "notification_listener_polling_interval_sec": 0.01})


@DBOS.workflow()
def two_gates():
    return [DBOS.recv(topic="go1", timeout_seconds=60), DBOS.recv(topic="go2", timeout_seconds=60)]


DBOS.launch()
with SetWorkflowID("x"):
    handle = DBOS.start_workflow(two_gates)
time.sleep(0.5)  # parked on go1
refused = []
for topic in ("go2", "EXECUTION_CANCELLED", "__proto__"):
    try:
        DBOS.send("x", f"meant for {topic}", topic=topic)
    except Exception as exc:  # a gate model would refuse here
        refused.append(f"{topic}: {exc}")
DBOS.send("x", "the answer to go1", topic="go1")
result = handle.get_result()
try:
    DBOS.send("x", "an answer to a finished workflow", topic="go1")
    late = "accepted"
except Exception as exc:
    late = f"refused: {exc}"
DBOS.destroy()

print("expected: the answers to go2, EXECUTION_CANCELLED and __proto__ refused while parked on go1, and the "
      "workflow parked on go2 after go1's answer; an answer to the finished workflow refused (ADR 0104 D1, D4)")
print(f"happened: refused {refused or 'nothing'}; the workflow finished with {result!r}; the late answer was {late}")
sys.exit(1 if not refused and result == ["the answer to go1", "meant for go2"] and late == "accepted" else 0)
