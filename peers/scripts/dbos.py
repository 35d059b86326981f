"""The DBOS adapter (peers/dbos.py) as DBOS source: one `@DBOS.workflow` runs every
flow, each step a `DBOS.run_step`, each gate a `DBOS.recv` on the gate's topic, each
answer a `DBOS.send`; on a SQLite system database.

As in the adapter, the DBOS application runs in a worker process, here the script
itself re-run with `--dbos-worker STORE`: a crash fault kills that process inside the
step (`os._exit`), and the script's main process relaunches it where the adapter
relaunches its worker, so recovery is DBOS's own `DBOS.launch()` in a new process.
The worker keeps the log in a file of the store, as the adapter keeps its witness in
a SQLite file there, so the log outlives the process that wrote it."""

from __future__ import annotations

from typing import Any

from loomcheck.peers.scripts import Translation, crash_attempts
from loomcheck.contract.sourcetext import escaped
from loomcheck.spec.programs import StepOp

JSON = Any

SETUP = '''
# -- DBOS, as the adapter drives it (peers/dbos.py) -------------------------------------------
# Two processes. The DBOS application runs in a WORKER process: this same script, re-run as
# `python this.py --dbos-worker STORE` (see just before the operations). The script's main
# process performs the operations by asking the worker, as the adapter asks its worker, and
# relaunches it when it has died: every launch is DBOS's own recovery of the PENDING workflows.
TEN_YEARS = 10 * 365 * 24 * 3600.0  # recv's timeout: on a timeout recv would checkpoint a None answer
APP_VERSION = "loomcheck-dbos-1"    # fixed, so that a relaunch recovers the previous process's workflows
SETTLE_SECONDS = 30.0               # a run that neither parks nor ends within this is a finding
CRASH_EXIT = 70                     # the worker's exit status when a crash fault fires
MAX_LAUNCHES = 8                    # relaunches before an operation, while DBOS's recovery keeps crashing
STOPPED = ("EXECUTION_SUSPENDED", "EXECUTION_COMPLETED", "EXECUTION_FAILED")

IN_WORKER = sys.argv[1:2] == ["--dbos-worker"]
STORE = sys.argv[2] if IN_WORKER else tempfile.mkdtemp(prefix="dbos-repro-")
DATABASE = os.path.join(STORE, "dbos.sqlite")
URL = "sqlite:///" + DATABASE
KEPT_LOG = os.path.join(STORE, "log.json")
FLOWS = {}   # construct name -> the flow function
GATES = {}   # construct name -> the condition of each of its gates, in call order


def save_log():
    """The log on disk: it must outlive the worker that wrote it (a crash is a process death)."""
    with open(KEPT_LOG + ".tmp", "w") as out:
        json.dump({"logs": LOGS, "flows": FLOW_OF}, out)
    os.replace(KEPT_LOG + ".tmp", KEPT_LOG)


def read_log():
    if os.path.exists(KEPT_LOG):
        with open(KEPT_LOG) as kept:
            saved = json.load(kept)
        LOGS.clear()
        LOGS.update(saved["logs"])
        FLOW_OF.clear()
        FLOW_OF.update(saved["flows"])


def flow(gates):
    """A flow: a plain function run by the one DBOS workflow, and what its recvs wait for."""
    def register(function):
        FLOWS[function.__name__] = function
        GATES[function.__name__] = gates
        return function
    return register


# -- in the worker: the DBOS application ----------------------------------------------------
STARTED_HERE = set()  # started by an operation of this process
ENTERED = set()       # every workflow whose function ran in this process
REDRIVEN = set()      # re-driven by DBOS's launch recovery from a running state
ANSWERING = threading.RLock()  # held by an operation while it notes what it did (the adapter's witness lock)


def after_the_operation():
    """A run's own events come after those of the operation that started or woke it."""
    with ANSWERING:
        pass


@DBOS.workflow(name="loomcheck.flow")
def loomcheck_flow(execution, flow_id, flow_input):
    """The one DBOS workflow: a run of the flow's latest definition, from the top."""
    after_the_operation()
    if execution not in STARTED_HERE:  # DBOS's launch recovery is re-driving it
        log = LOGS.get(execution, [])
        if not log or log[-1]["type"] not in STOPPED:  # it was running when its process died
            note(execution, "EXECUTION_RECOVERED", {})
            REDRIVEN.add(execution)
    ENTERED.add(execution)
    return DEFINED[flow_id](execution, flow_input)


def dbos_step(step_id, body):
    """A step: DBOS names the checkpoint after the step id, runs the body once and, on every
    re-execution, returns the checkpointed output without running it."""
    def checkpointed():
        try:
            return body()
        except WorkerCrash:
            die()  # the worker dies inside the step, before DBOS checkpoints it

    return DBOS.run_step({"name": step_id}, checkpointed)


def die():
    save_log()
    sys.stderr.flush()
    os._exit(CRASH_EXIT)


def wait_at_gate(topic):
    """A gate: DBOS's recv on the gate's topic. A workflow blocked in it is parked."""
    value = DBOS.recv(topic=topic, timeout_seconds=TEN_YEARS)
    after_the_operation()
    return value


def waiting(execution, topic):
    """Whether DBOS's mailbox holds an unconsumed message for this workflow and topic."""
    mailbox = sqlite3.connect(DATABASE)  # DBOS's notifications table, read as it is
    try:
        return mailbox.execute("SELECT COUNT(*) FROM notifications WHERE destination_uuid = ? AND topic = ? "
                               "AND consumed = 0", (execution, topic)).fetchone()[0] > 0
    finally:
        mailbox.close()


def park_of(execution, steps, gates):
    """The gate DBOS's records say the workflow is blocked at, or None. recv checkpoints its
    timeout as a DBOS.sleep row (function id k+1) before it blocks, and itself (k) only when it
    consumes a message: parked is a last row DBOS.sleep with no recv row before it, and no
    message waiting (else recv is about to consume it). The gate's index: the recv rows before it."""
    if not steps or steps[-1]["function_name"] != "DBOS.sleep":
        return None
    if any(s["function_id"] == steps[-1]["function_id"] - 1 for s in steps):
        return None
    index = sum(1 for s in steps if s["function_name"] == "DBOS.recv")
    if index >= len(gates) or waiting(execution, gates[index]["on"]):
        return None
    return gates[index]


def error_of(error):
    if isinstance(error, EmitRefused):  # the flow language's refused emit (ADR 0104 D1)
        return {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(error)}
    return {"type": type(error).__name__, "message": str(error)}


def ending(execution):
    """Wait until DBOS's records say the workflow is blocked in a recv or finished."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        status = DBOS.get_workflow_status(execution)
        if status is None:
            raise RuntimeError(f"DBOS has no workflow {execution!r}")
        if status.status == "SUCCESS":
            return "completed", status.output
        if status.status in ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
            return "failed", error_of(status.error)
        if status.status == "CANCELLED":
            return "failed", {"type": "Cancelled", "message": "DBOS cancelled the workflow"}
        if status.status == "PENDING":
            flow_id = status.input["args"][1]  # loomcheck_flow's arguments: (execution, flow id, input)
            gates = GATES[DEFINED[flow_id].__name__] if flow_id in DEFINED else []
            steps = DBOS.list_workflow_steps(execution)
            gate = park_of(execution, steps, gates)
            if gate is not None and DBOS.list_workflow_steps(execution) == steps:  # unchanged meanwhile
                return "parked", gate
        time.sleep(0.002)
    raise RuntimeError(f"DBOS's workflow {execution!r} neither parked in recv nor finished within "
                       f"{SETTLE_SECONDS:.0f} s")


def settle(execution, finished_before=False):
    """Note how the run stands now, unless the log already says exactly that; what DBOS says."""
    kind, value = ending(execution)
    if kind == "parked":
        said = f"blocked in recv(topic={value['on']!r})"
    else:
        said = f"SUCCESS, output {value!r}" if kind == "completed" else f"failed, {value!r}"
    if finished_before:  # it had finished before this operation: nothing ran
        return said
    last = LOGS.get(execution, [])[-1:] or [{}]
    if kind == "parked":
        if last[0].get("type") == "EXECUTION_SUSPENDED" and last[0]["payload"] == {"condition": value}:
            return said + " (still the same recv: the run did not move)"
        note(execution, "EXECUTION_SUSPENDED", {"condition": value})
    elif kind == "completed":
        note(execution, "EXECUTION_COMPLETED", {"output": value})
    else:
        note(execution, "EXECUTION_FAILED", {"error": value})
    return said


def launched():
    """DBOS.launch() on the store, its recovery included: wait until the recovery has entered every
    PENDING workflow, then settle the ones it re-drove from a running state. Their ids."""
    DBOS(config={"name": "loomcheck", "system_database_url": URL, "log_level": "WARNING",
                 "application_version": APP_VERSION,
                 # SQLite has no LISTEN/NOTIFY: recv is woken by this poller (default 1 s)
                 "notification_listener_polling_interval_sec": 0.002})
    DBOS.launch()  # DBOS's own recovery of every PENDING workflow starts here
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:  # recovery re-enqueues each one (ENQUEUED), then runs it
        pending = DBOS.list_workflows(status=["PENDING", "ENQUEUED"], load_input=False, load_output=False)
        if {status.workflow_id for status in pending} <= ENTERED:
            break
        time.sleep(0.005)
    redriven = sorted(REDRIVEN)
    for execution in redriven:
        settle(execution)
    return redriven


def worker_start(execution, flow_id, flow_input):
    """start, in the worker: DBOS.start_workflow with the execution id as the workflow id."""
    existed = DBOS.get_workflow_status(execution) is not None
    with ANSWERING:  # the run's own events come after EXECUTION_STARTED
        STARTED_HERE.add(execution)
        with SetWorkflowID(execution):  # the execution id IS the workflow id
            DBOS.start_workflow(loomcheck_flow, execution, flow_id, flow_input)
        if existed:  # DBOS's idempotent start: the existing workflow, nothing new runs
            return {"ok": True, "said": "start_workflow: the workflow id exists, nothing runs again"}
        FLOW_OF[execution] = flow_id
        note(execution, "EXECUTION_STARTED", {"flowId": flow_id, "input": flow_input})
    return {"ok": True, "said": "start_workflow: " + settle(execution)}


def worker_send(execution, event_type, payload):
    """resume, in the worker: DBOS.send on the topic the answer names."""
    before = DBOS.get_workflow_status(execution)  # had the workflow finished already?
    finished_before = before is not None and before.status in ("SUCCESS", "ERROR", "CANCELLED",
                                                               "MAX_RECOVERY_ATTEMPTS_EXCEEDED")
    with ANSWERING:  # the answer is noted before the run it wakes writes anything
        try:
            DBOS.send(execution, payload, topic=event_type)
        except DBOSNonExistentWorkflowError as exc:
            return {"ok": False, "reason": "unknown-execution", "said": f"send refused: {exc}"}
        note(execution, event_type, payload)  # DBOS accepted the message
        note(execution, "EXECUTION_RESUMED", payload)
    return {"ok": True, "said": f"send(topic={event_type!r}) accepted; the workflow: "
                                + settle(execution, finished_before)}


def serve():
    """The worker's loop: one JSON request a line on stdin, one reply a line on stdout."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever this process prints goes to its log, never into the replies
    read_log()  # what the processes before this one noted
    for line in sys.stdin:
        request = json.loads(line)
        DEFINED.update({flow_id: FLOWS[name] for flow_id, name in request["flows"].items()})
        try:
            if request["op"] == "launch":
                reply = {"ok": True, "redriven": launched()}
            elif request["op"] == "start":
                reply = worker_start(request["execution"], request["flow"], request["input"])
            else:
                reply = worker_send(request["execution"], request["type"], request["payload"])
        except Exception:
            reply = {"failed": traceback.format_exc()}
        save_log()
        replies.write(json.dumps(reply) + "\\n")
    os._exit(0)  # the main process is gone; workflows blocked in recv must not keep this one alive


# -- in the main process: the operations, as the adapter makes them ---------------------------
class WorkerDied(Exception):
    """The worker process exited (a crash fault fired in it)."""


worker = None  # the live worker process


def ask(op, **fields):
    """One request to the worker, and its reply."""
    request = {"op": op, "flows": {flow_id: construct.__name__ for flow_id, construct in DEFINED.items()}, **fields}
    try:
        worker.stdin.write(json.dumps(request) + "\\n")
        worker.stdin.flush()
        line = worker.stdout.readline()
    except OSError:  # a broken pipe: the worker is gone
        line = ""
    finally:
        read_log()  # what the worker noted, also when it died meanwhile
    if not line:
        raise WorkerDied(f"the worker process exited with status {worker.wait()}")
    reply = json.loads(line)
    if "failed" in reply:
        raise RuntimeError(f"the DBOS worker failed:\\n{reply['failed']}")
    return reply


def ensure():
    """A live worker; launching one runs DBOS's recovery. The ids it re-drove."""
    global worker
    if worker is not None and worker.poll() is None:
        return []
    with open(os.path.join(STORE, "worker.log"), "a") as dbos_log:  # DBOS's own log lines go there
        worker = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--dbos-worker", STORE],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=dbos_log, text=True, bufsize=1)
    redriven = ask("launch")["redriven"]
    print(f"  DBOS.launch() in a new worker process: its recovery re-drove {redriven} from a running state")
    return redriven


def run(op, **fields):
    # A dead worker is relaunched first, as a process supervisor would, and every launch is
    # DBOS's recovery of whatever was PENDING; a crash fault may kill that launch again, so
    # it is relaunched until it stays up (each launch is one more recovery attempt).
    for launch in range(MAX_LAUNCHES):
        try:
            ensure()
            break
        except WorkerDied as died:
            print(f"  DBOS.launch() in a new worker process: {died} during its recovery")
            if launch == MAX_LAUNCHES - 1:
                raise RuntimeError(f"DBOS's launch recovery crashed the worker {MAX_LAUNCHES} times in a row")
    try:
        reply = ask(op, **fields)
    except WorkerDied as died:
        print(f"  DBOS: {died}: a crash fault fired inside a step")
        return "ok:crashed"
    print(f"  DBOS: {reply['said']}")
    return "ok" if reply["ok"] else "refused:" + reply["reason"]


def dbos_status(execution):
    """DBOS's record of the workflow, read as any client of the system database reads it."""
    if not os.path.exists(DATABASE):
        ensure()  # DBOS creates the system database when it first launches on it
    client = DBOSClient(system_database_url=URL)
    try:
        found = client.list_workflows(workflow_ids=[execution])
    finally:
        client.destroy()
    return found[0] if found else None


def start(execution, flow_id, flow_input):
    if flow_id not in DEFINED:  # no program, no DBOS workflow to start
        return "refused:unknown-flow"
    return run("start", execution=execution, flow=flow_id, input=flow_input)


def resume(execution, event_type, payload):
    return run("resume", execution=execution, type=event_type, payload=payload)


def relaunch():
    """DBOS has no per-workflow recovery: a relaunch recovers every PENDING workflow, and a live
    DBOS has recovered already, so recover and recover_abandoned relaunch a dead worker only."""
    if worker is not None and worker.poll() is None:
        print("  DBOS: the worker is alive, nothing to relaunch")
    ensure()


def recover(execution):
    if execution not in FLOW_OF and dbos_status(execution) is None:
        return "refused:unknown-execution"
    try:
        relaunch()
    except WorkerDied as died:
        print(f"  DBOS.launch() in a new worker process: {died} during its recovery")
        return "ok:crashed"
    return "ok"


def recover_abandoned():
    before = {execution: len(log) for execution, log in LOGS.items()}
    try:
        relaunch()
    except WorkerDied as died:
        print(f"  DBOS.launch() in a new worker process: {died} during its recovery")
    return "ok:" + ",".join(execution for execution in FLOW_OF  # the ones it noted EXECUTION_RECOVERED for
                            if any(event["type"] == "EXECUTION_RECOVERED"
                                   for event in LOGS.get(execution, [])[before.get(execution, 0):]))


def stop():
    """The script is done: the worker exits at the end of its input; the store goes."""
    if worker is not None and worker.poll() is None:
        worker.stdin.close()
        worker.wait(timeout=10)
    shutil.rmtree(STORE, ignore_errors=True)
'''

BEFORE_OPERATIONS = '''

# -- the worker process is this script, re-run: it serves here, with every flow defined -------
if IN_WORKER:
    serve()  # never returns
atexit.register(stop)
ensure()  # the adapter launches its first worker before the first operation (its reset)
'''

STATE = '''
# -- what DBOS itself reports of each workflow (what the adapter's read_state reads) --------
print()
client = DBOSClient(system_database_url=URL)
for execution in FLOW_OF:
    try:
        status = client.list_workflows(workflow_ids=[execution])[0]
        steps = client.list_workflow_steps(execution)
        mailbox = sqlite3.connect(DATABASE)
        unread = [topic for (topic,) in mailbox.execute(
            "SELECT topic FROM notifications WHERE destination_uuid = ? AND consumed = 0", (execution,))]
        mailbox.close()
        print(f"DBOS's state of {execution}: status {status.status}, checkpoints "
              f"{[(s['function_id'], s['function_name'], s['output']) for s in steps]!r}, "
              f"unconsumed messages on topics {unread!r}")
    except Exception as exc:
        print(f"DBOS's state of {execution}: reading it raised {type(exc).__name__}: {exc}")
client.destroy()
'''


class DbosScript(Translation):
    """DBOS Transact, as peers/dbos.py drives it (one mode: DBOS addresses answers by topic itself)."""

    peer = "DBOS Transact"
    install = "pip install dbos"
    calls = ('start', 'resume', 'recover', 'recover_abandoned')

    def __init__(self) -> None:
        self._gates: list[dict[str, JSON]] = []  # the flow being written's gates, as body_lines() asks for them

    def imports(self) -> list[str]:
        return ["import atexit", "import os", "import shutil", "import sqlite3", "import subprocess",
                "import tempfile", "import threading", "import time", "import traceback", "",
                "from dbos import DBOS, DBOSClient, SetWorkflowID",
                "from dbos._error import DBOSNonExistentWorkflowError"]

    def setup(self) -> list[str]:
        return SETUP.strip("\n").splitlines()

    def flow(self, flow_id: str, name: str, body: list[str]) -> list[str]:
        # body_lines() asked for this flow's gates (gate() below) just before this call.
        gates, self._gates = self._gates, []
        return [f"@flow(gates={gates!r})",
                f"def {name}(x, flow_input):  # flow '{escaped(flow_id)}', run by loomcheck_flow",
                *body]

    def step(self, op: StepOp) -> str:
        return f"run_step(x, {op.id!r}, {op.output!r}, {crash_attempts(op)!r}, dbos_step)"

    def gate(self, index: int, condition: dict[str, JSON]) -> str:
        assert index == len(self._gates), "body_lines() asks for a flow's gates in call order"
        self._gates.append(condition)  # what settle() reports as the condition of the index-th recv
        return f"wait_at_gate({condition['on']!r})"

    def input(self) -> str:
        return "flow_input"

    def before_operations(self) -> list[str]:
        return BEFORE_OPERATIONS.rstrip("\n").splitlines()

    def state(self) -> list[str]:
        return STATE.strip("\n").splitlines()
