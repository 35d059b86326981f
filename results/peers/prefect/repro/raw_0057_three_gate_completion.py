"""Reproduces resume.gate-mismatch (ADR 0104 D1) on Prefect (raw: no integration checks before an answer), in its own API.

Written by `loomcheck repro` from 0057-three-gate-completion. Needs only: pip install prefect
Exit status 1 while it reproduces, 0 once it does not (then re-run loomcheck on the peer).
`python this.py FILE` also writes the outcomes and logs it saw as JSON.

resume.gate-mismatch (ADR 0104 D1, "An answer names the parked gate") is violated: resume 'reject' reached an execution parked on 'approve' and got ok, not refused gate-mismatch.
  #8 EXECUTION_SUSPENDED {"condition":{"on":"approve"}}: the last event before the resume, after which the execution was parked on 'approve'; just before it the execution was running, parked at no gate (crashed or mid-run).
  #9 reject {"n":99}: appended by the resume, which should have been refused; just before it the execution was parked on 'approve'.
  #10 EXECUTION_RESUMED {"n":99}: appended by the resume, which should have been refused; just before it the execution was parked on 'approve'.
  #11 loomcheck.observed {"gate":1,"on":"approve","value":{"n":99}}: appended by the resume, which should have been refused; just before it the execution was running, parked at no gate (crashed or mid-run).
  #12 STEP_STARTED {"stepId":"second-half","attempt":1}: appended by the resume, which should have been refused; just before it the execution was running, parked at no gate (crashed or mid-run).
  What ADR 0104 D1 requires instead: ResumeRefusedError gate-mismatch: only a resume naming 'approve' answers it, with nothing appended
  ADR 0104 D1: "There it waits for a resume that names the gate, passing the ingress gate (#304/#305)"
  The invariant: docs/invariants.md#resume.gate-mismatch
"""

COVERS = {'prefect-raw': ('refusal.append-nothing', 'refusal.typed-reason')}  # the findings of reports/peers/prefect-raw this reproduces

import json
import sys

import atexit
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from typing import Any


# -- a private Prefect, set up before Prefect is imported (its settings are read at import) -----
def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


HOME = tempfile.mkdtemp(prefix="prefect-repro-")
PORT = free_port()
API_URL = f"http://127.0.0.1:{PORT}/api"
os.environ.update({
    "PREFECT_HOME": os.path.join(HOME, "home"),
    "PREFECT_API_URL": API_URL,
    "PREFECT_SERVER_DATABASE_CONNECTION_URL": "sqlite+aiosqlite:///" + os.path.join(HOME, "prefect.db"),
    "PREFECT_RESULTS_LOCAL_STORAGE_PATH": os.path.join(HOME, "storage"),
    "PREFECT_PROFILES_PATH": os.path.join(HOME, "profiles.toml"),
    # nothing may reach the network
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": "false",
    "PREFECT_CLIENT_SERVER_VERSION_CHECK_ENABLED": "false",
    "PREFECT_SERVER_UI_ENABLED": "false",
    "PREFECT_UI_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_ENABLED": "false",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_LOGGING_LEVEL": "CRITICAL",
    # background services that would act on the flow runs behind the script's back
    "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_LATE_RUNS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_FOREMAN_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_PAUSE_EXPIRATIONS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_CANCELLATION_CLEANUP_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_REPOSSESSOR_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_CLEANUP_RECONCILER_ENABLED": "false",
})

import pydantic  # noqa: E402  (Prefect's own dependency: a gate's RunInput model)
from prefect import flow, task  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from prefect.client.schemas.responses import SetStateStatus  # noqa: E402
from prefect.exceptions import NotPausedError, Pause  # noqa: E402
from prefect.flow_engine import run_flow  # noqa: E402
from prefect.flow_runs import resume_flow_run, suspend_flow_run  # noqa: E402
from prefect.input.run_input import AutomaticRunInput  # noqa: E402
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings  # noqa: E402
from prefect.states import Scheduled  # noqa: E402

# -- what the script records: the events loomcheck's adapter noted, as Loom events ---------
LOGS = {}       # execution -> [{seq, type, payload}]
FLOW_OF = {}    # execution -> flow id
DEFINED = {}    # flow id -> the peer construct its latest definition wrote out
OUTCOMES = []   # ok | ok:crashed | refused:<reason>, per operation


def note(execution, event_type, payload):
    log = LOGS.setdefault(execution, [])
    log.append({"seq": len(log) + 1, "type": event_type, "payload": json.loads(json.dumps(payload))})


def fact(event_type, payload):
    return event_type + "\0" + json.dumps(payload, sort_keys=True)


def emit(execution, event_type, payload):
    """An application event, once per fact (the flow language's emit rule)."""
    if all(fact(e["type"], e["payload"]) != fact(event_type, payload) for e in LOGS.get(execution, [])):
        note(execution, event_type, payload)


def started(execution, step_id):
    return sum(1 for e in LOGS.get(execution, [])
               if e["type"] == "STEP_STARTED" and e["payload"].get("stepId") == step_id)


class WorkerCrash(Exception):
    """The worker dies inside a step (a crash fault of the counterexample)."""


class EmitRefused(Exception):
    """The flow emitted a kernel event type; the run fails (ADR 0104 D1)."""


def run_step(execution, step_id, output, crash_attempts, through):
    """Run the step through the peer (`through(step_id, body)`); note what the peer does."""
    ran = []

    def body():
        attempt = started(execution, step_id) + 1
        ran.append(attempt)
        note(execution, "STEP_STARTED", {"stepId": step_id, "attempt": attempt})
        if attempt in crash_attempts:
            raise WorkerCrash(f"{step_id}#{attempt}")
        return output

    value = through(step_id, body)
    if ran:  # the peer ran the body: what it hands back is what it recorded
        note(execution, "STEP_COMPLETED", {"stepId": step_id, "output": value})
    return value


def observe(execution, passed):
    """What each gate passed with since the last observe."""
    for gate, on, value in passed:
        emit(execution, "loomcheck.observed", {"gate": gate, "on": on, "value": value})
    passed.clear()


def define(flow_id, construct):
    DEFINED[flow_id] = construct
    return "ok"


# -- the Prefect server: loopback only, its own process group, stopped at exit -------------
SERVER = []  # the server process, once started


def start_server(timeout=90.0):
    with open(os.path.join(HOME, "server.log"), "ab") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
             "--host", "127.0.0.1", "--port", str(PORT),
             "--log-level", "error", "--lifespan", "on"],
            env=dict(os.environ), stdout=log, stderr=log, start_new_session=True)
    SERVER.append(server)
    atexit.register(stop_server)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the Prefect server exited ({server.returncode}); see {HOME}/server.log")
        try:
            with urllib.request.urlopen(API_URL + "/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the Prefect server did not answer within {timeout} s")


def stop_server():
    for server in SERVER:
        if server.poll() is None:
            try:
                os.killpg(server.pid, signal.SIGTERM)  # the group: uvicorn and anything it forked
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
            except ProcessLookupError:
                pass
    shutil.rmtree(HOME, ignore_errors=True)


# -- Prefect, as the adapter drives it (peers/prefect.py) -------------------------------
# Prefect suspends only a flow run that has a deployment ("Cannot suspend flows without a
# deployment"), so every execution is a flow run of one deployment with no work pool: this
# script is its worker and runs each flow run in process with the flow defined for its flowId.
FLOW_NAME, DEPLOYMENT_NAME = "loomcheck-flow", "loomcheck"
DEPLOYMENT = []  # the deployment's id, once registered
RUNS = {}        # execution -> Prefect's flow run id


def register_deployment():
    with get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name(FLOW_NAME)
        DEPLOYMENT.append(client.create_deployment(flow_id=flow_id, name=DEPLOYMENT_NAME))


def step_key(flow_run_id, step_id):
    """The step's record in Prefect's result store: one per flow run and step (hashed: the key
    is a file name in the local result storage)."""
    return f"{flow_run_id}-{hashlib.sha256(json.dumps(step_id).encode()).hexdigest()[:32]}"


@task(name="loomcheck-step", persist_result=True,
      cache_key_fn=lambda context, parameters: step_key(context.task_run.flow_run_id, parameters["step_id"]))
def loomcheck_step(step_id, body):
    # The step id travels in the stored value so Prefect's record names the step it holds.
    return {"stepId": step_id, "output": body()}


class WorkerDied(BaseException):
    """A crash fault fired: the worker dies. Prefect classifies a BaseException escaping the
    user's code (as a KeyboardInterrupt or a termination signal) as a crash of the process
    running the flow: the task run and the flow run end Crashed (an Exception: Failed)."""


def through_task(step_id, body):
    """A step: Prefect runs the body once and, on a re-run of the flow, returns the cached value."""
    def dies():
        try:
            return body()
        except WorkerCrash as crash:
            raise WorkerDied(str(crash)) from None

    return loomcheck_step(step_id, dies)["output"]


def gate_input(condition):
    """The RunInput a gate waits for: one field, `value`, of any JSON. Its description, which
    Prefect stores beside the schema, is the gate's condition. A gate is
    suspend_flow_run(wait_for_input=gate_input(condition)) with Prefect's default key, its own
    count of pauses in this run: the i-th call gets the input stored for key i (ADR 0057)."""
    model = pydantic.create_model("LoomGate", value=(Any, ...), __base__=AutomaticRunInput)
    model._description = json.dumps(condition)
    return model


def condition_of(client, flow_run_id, state):
    """The pending pause's condition, read back from the flow run input under its keyset."""
    keyset = state.state_details.run_input_keyset
    if not keyset:
        return None
    text = client.read_flow_run_input(flow_run_id, keyset["description"])
    value = json.loads(text) if text else None
    return json.loads(value) if isinstance(value, str) else value  # stored as a JSON string of the JSON


def prefect_state(execution):
    with get_client(sync_client=True) as client:
        return client.read_flow_run(RUNS[execution]).state


# -- running: the script, as the deployment's worker, runs the scheduled flow run -----------
def run(execution):
    """One run of the flow run, and how it ended as Prefect reports it."""
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(RUNS[execution])
    try:
        # Heartbeats feed Prefect's zombie detection (an automation, off here) and cost up to a
        # second at the end of every run.
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            run_flow(DEFINED[FLOW_OF[execution]], flow_run=flow_run)
    except Pause:
        ending = ending_of(execution)  # suspend_flow_run exits the run: Prefect has recorded the pause
    except WorkerDied as died:
        ending = ("crashed", str(died))  # Prefect has recorded the Crashed state
    except Exception as exc:
        if not prefect_state(execution).is_failed():
            raise
        if isinstance(exc, EmitRefused):  # the flow refused a kernel event type's emit
            ending = ("failed", {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(exc)})
        else:  # an exception Prefect raised inside the flow: Prefect failed the flow run with it
            ending = ("failed", {"type": type(exc).__name__, "message": str(exc).splitlines()[0]})
    else:
        ending = ending_of(execution)
    print(f"  Prefect: {ending[0]} {ascii(ending[1])}")
    return settle(execution, ending)


def ending_of(execution):
    """How the run ended, as Prefect reports it (not as the flow saw it)."""
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(RUNS[execution])
        state = flow_run.state
        if state is not None and state.is_paused():
            return ("parked", condition_of(client, flow_run.id, state))
    if state is not None and state.is_completed():
        return ("completed", state.result())
    raise RuntimeError(f"Prefect reports the flow run in state {state!r} after a run that returned")


def settle(execution, ending):
    kind, value = ending
    if kind == "parked":
        note(execution, "EXECUTION_SUSPENDED", {"condition": value})
    elif kind == "completed":
        note(execution, "EXECUTION_COMPLETED", {"output": value})
    elif kind == "failed":
        note(execution, "EXECUTION_FAILED", {"error": value})
    else:
        return "ok:crashed"  # the worker died: nothing more is written
    return "ok"


# -- the operations, with the adapter's own checks before Prefect sees them -------------------
def start(execution, flow_id, input):
    if flow_id not in DEFINED:
        return "refused:unknown-flow"
    if execution in FLOW_OF:  # Prefect's flow run ids are its own: a second start under one id is the id's problem
        return "refused:duplicate-execution"
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run_from_deployment(
            DEPLOYMENT[0], parameters={"execution": execution, "flowId": flow_id, "input": input})
    RUNS[execution] = flow_run.id
    FLOW_OF[execution] = flow_id
    note(execution, "EXECUTION_STARTED", {"flowId": flow_id, "input": input})
    return run(execution)


def resume(execution, event_type, payload):
    if execution not in RUNS:  # Prefect addresses flow runs by its own ids: this one has none
        return "refused:unknown-execution"
    refused = guard(execution, event_type)
    if refused:
        return refused
    print(f"  Prefect: resume_flow_run(run_input={{'value': {ascii(payload)}}})  # names no gate")
    try:
        resume_flow_run(RUNS[execution], run_input={"value": payload})
    except NotPausedError as exc:
        print(f"  Prefect: NotPausedError: {exc}")
        return "refused:not-suspended"
    except RuntimeError as exc:
        if "Reason:" in str(exc):  # the server's validation of the input against the stored schema
            print(f"  Prefect: {exc}")
            return "refused:invalid-payload"
        raise
    note(execution, event_type, payload)  # Prefect accepted the answer
    note(execution, "EXECUTION_RESUMED", payload)
    return run(execution)  # the accepted resume left the flow run Scheduled: the worker runs it


def recover(execution):
    """Prefect's retry, what the UI's "Retry" sends: propose Scheduled("AwaitingRetry"), not
    forced; Prefect's orchestration policy decides whether the flow run may be retried."""
    if execution not in RUNS:
        return "refused:unknown-execution"
    refused = guard(execution, None)
    if refused:
        return refused
    with get_client(sync_client=True) as client:
        result = client.set_flow_run_state(RUNS[execution],
                                           Scheduled(name="AwaitingRetry", message="loomcheck recover"))
    print(f"  Prefect: set_flow_run_state(Scheduled('AwaitingRetry')) -> {result.status.value}")
    if result.status != SetStateStatus.ACCEPT:
        reason = getattr(result.details, "reason", "") or ""
        if prefect_state(execution).is_final():  # "Run is already COMPLETED."
            print(f"  Prefect: {reason}")
            return "refused:terminal"
        raise RuntimeError(f"Prefect did not accept the retry ({result.status.value}): {reason}")
    note(execution, "EXECUTION_RECOVERED", {})
    return run(execution)


def recover_abandoned():
    """The executions whose flow run Prefect reports Crashed, each retried."""
    crashed = [x for x in FLOW_OF if x in RUNS and prefect_state(x).is_crashed()]
    for execution in crashed:
        recover(execution)
    return "ok:" + ",".join(crashed)


def guard(execution, event_type):
    return None  # raw: every call goes straight to Prefect


# -- the flows: loomcheck's flow programs as the peer's own code ----------

@flow(name=FLOW_NAME, persist_result=True, validate_parameters=False)
def flow_0(execution, flowId, input):  # flow 'three-approvals'; every run of it starts at the top
    x = execution
    passed = []  # (gate, on, value) since the last observe
    passed.append((0, 'approve', suspend_flow_run(wait_for_input=gate_input({'on': 'approve'}))))  # gate 0
    observe(x, passed)
    run_step(x, 'first-half', 1, (), through_task)  # step first-half
    passed.append((1, 'approve', suspend_flow_run(wait_for_input=gate_input({'on': 'approve'}))))  # gate 1
    observe(x, passed)
    run_step(x, 'second-half', 2, (), through_task)  # step second-half
    passed.append((2, 'approve', suspend_flow_run(wait_for_input=gate_input({'on': 'approve'}))))  # gate 2
    observe(x, passed)
    return None


# -- the adapter starts its server and registers the deployment before the first operation ----
start_server()
register_deployment()


# -- the counterexample's operations, as the adapter makes them ----------------
OPERATIONS = [
    ('1. define three-approvals = [{"op":"suspend","on":"approve"},{"op":"observe"},{"op":"...', lambda: define('three-approvals', flow_0)),
    ('2. start x1 of three-approvals with null', lambda: start('x1', 'three-approvals', None)),
    ('3. resume x1 with \'approve\' {"n":1}', lambda: resume('x1', 'approve', {'n': 1})),
    ('4. resume x1 with \'reject\' {"n":99}', lambda: resume('x1', 'reject', {'n': 99})),
    ('5. resume x1 with \'approve\' {"n":2}', lambda: resume('x1', 'approve', {'n': 2})),
    ('6. resume x1 with \'approve\' {"n":3}', lambda: resume('x1', 'approve', {'n': 3})),
    ('7. resume x1 with \'approve\' {"n":4}', lambda: resume('x1', 'approve', {'n': 4})),
]
for title, call in OPERATIONS:
    print(title)
    try:
        label = call()
    except Exception as exc:  # the peer raised: that is the outcome, and the run stops there
        label = f"raised:{type(exc).__name__}"
        print(f"  {type(exc).__name__}: {exc}")
    OUTCOMES.append(label)
    print(f"  -> {label}")
    if label.startswith("raised:"):
        break

# -- what Prefect itself reports of each flow run (what the adapter's read_state reads) -------
print()
for execution in FLOW_OF:
    try:
        with get_client(sync_client=True) as client:
            flow_run = client.read_flow_run(RUNS[execution])
            state = flow_run.state
            stored = client.filter_flow_run_input(flow_run.id, key_prefix="suspended-", limit=1000, exclude_keys=set())
            answers = sorted((int(item.key.split("-")[1]), json.loads(item.value)["value"]) for item in stored
                             if item.key.endswith("-response"))  # suspended-<pause key>-response
            pending = condition_of(client, flow_run.id, state) if state.is_paused() else None
        result = state.result() if state.is_completed() else None
        print(f"Prefect's flow run of {execution}: state {state.type.value} ({state.name!r}), "
              f"pause key {state.state_details.pause_key!r}, pending gate {ascii(pending)}, "
              f"stored answers by pause key {ascii(answers)}, result {ascii(result)}")
    except Exception as exc:
        print(f"Prefect's flow run of {execution}: reading it raised {type(exc).__name__}: {ascii(str(exc))}")

EVIDENCE = [['x1', {'seq': 8, 'type': 'EXECUTION_SUSPENDED', 'payload': {'condition': {'on': 'approve'}}}], ['x1', {'seq': 9, 'type': 'reject', 'payload': {'n': 99}}], ['x1', {'seq': 10, 'type': 'EXECUTION_RESUMED', 'payload': {'n': 99}}], ['x1', {'seq': 11, 'type': 'loomcheck.observed', 'payload': {'gate': 1, 'on': 'approve', 'value': {'n': 99}}}], ['x1', {'seq': 12, 'type': 'STEP_STARTED', 'payload': {'stepId': 'second-half', 'attempt': 1}}]]  # the events the explanation cites: [execution, event]
FOUND_OUTCOMES = ['ok', 'ok', 'ok', 'ok', 'ok', 'refused:not-suspended', 'refused:not-suspended']  # when loomcheck found it
FOUND_LOGS = {'x1': [{'seq': 1, 'type': 'EXECUTION_STARTED', 'payload': {'flowId': 'three-approvals', 'input': None}},
                     {'seq': 2, 'type': 'EXECUTION_SUSPENDED', 'payload': {'condition': {'on': 'approve'}}},
                     {'seq': 3, 'type': 'approve', 'payload': {'n': 1}},
                     {'seq': 4, 'type': 'EXECUTION_RESUMED', 'payload': {'n': 1}},
                     {'seq': 5, 'type': 'loomcheck.observed', 'payload': {'gate': 0, 'on': 'approve', 'value': {'n': 1}}},
                     {'seq': 6, 'type': 'STEP_STARTED', 'payload': {'stepId': 'first-half', 'attempt': 1}},
                     {'seq': 7, 'type': 'STEP_COMPLETED', 'payload': {'stepId': 'first-half', 'output': 1}},
                     {'seq': 8, 'type': 'EXECUTION_SUSPENDED', 'payload': {'condition': {'on': 'approve'}}},
                     {'seq': 9, 'type': 'reject', 'payload': {'n': 99}},
                     {'seq': 10, 'type': 'EXECUTION_RESUMED', 'payload': {'n': 99}},
                     {'seq': 11,
                      'type': 'loomcheck.observed',
                      'payload': {'gate': 1, 'on': 'approve', 'value': {'n': 99}}},
                     {'seq': 12, 'type': 'STEP_STARTED', 'payload': {'stepId': 'second-half', 'attempt': 1}},
                     {'seq': 13, 'type': 'STEP_COMPLETED', 'payload': {'stepId': 'second-half', 'output': 2}},
                     {'seq': 14, 'type': 'EXECUTION_SUSPENDED', 'payload': {'condition': {'on': 'approve'}}},
                     {'seq': 15, 'type': 'approve', 'payload': {'n': 2}},
                     {'seq': 16, 'type': 'EXECUTION_RESUMED', 'payload': {'n': 2}},
                     {'seq': 17, 'type': 'loomcheck.observed', 'payload': {'gate': 2, 'on': 'approve', 'value': {'n': 2}}},
                     {'seq': 18, 'type': 'EXECUTION_COMPLETED', 'payload': {'output': None}}]}
REFERENCE = ['ok', 'ok', 'ok', 'refused:gate-mismatch', 'ok', 'ok', 'refused:not-suspended']  # the reference kernel's outcomes for the same operations
EXPECTED = "ResumeRefusedError gate-mismatch: only a resume naming 'approve' answers it, with nothing appended"
CLAIM = "resume 'reject' reached an execution parked on 'approve' and got ok, not refused gate-mismatch."

# -- the judgement ------------------------------------------------------------------------
for execution, log in LOGS.items():
    print(f"log {execution}:")
    for event in log:
        print(f"  #{event['seq']} {ascii(event['type'])[1:-1]} {json.dumps(event['payload'])}")
if len(sys.argv) > 1:  # python this.py FILE: what the script saw, as JSON
    with open(sys.argv[1], "w") as out:
        json.dump({"outcomes": OUTCOMES, "logs": LOGS}, out)
if EVIDENCE:
    reproduces = all(event in LOGS.get(execution, []) for execution, event in EVIDENCE)
else:
    reproduces = OUTCOMES == FOUND_OUTCOMES and FOUND_LOGS in (None, LOGS)
print()
print("outcomes:      ", OUTCOMES)
print("the reference: ", REFERENCE)
print("expected:", EXPECTED)
print("happened:", CLAIM if reproduces else "no longer: " + ("the cited events are gone" if EVIDENCE
                                                              else "the outcomes or logs differ from when it was found"))
sys.exit(1 if reproduces else 0)
