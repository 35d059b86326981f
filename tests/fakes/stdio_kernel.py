"""A kernel behind the driver protocol that misbehaves on purpose, for the harness's
own tests (tests/test_transport.py): the reference kernel, served line by line
through `loomcheck.protocol.server.handle`, except for one fault.

    python tests/fakes/stdio_kernel.py MODE [every-process]

A fault fires once per run, at the first request of the op its mode names (the
first `resume` for most). The harness gives every process of one run the same
$LOOMCHECK_STORE_DIR, where a small state file counts the processes started and
remembers that the fault fired, so a restarted process behaves. With
`every-process` the fault fires once in every process instead, so a run spends
its budget of restarts. `slow` and `stderr-flood` are not faults: every request
is answered, correctly.

For the tests' eyes: each process appends its pid to the file $STDIO_FAKE_PIDS names
(if set), and `hang` writes its pid to $STDIO_FAKE_HANGING (if set) when it stops answering."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from loomcheck.protocol import wire
from loomcheck.protocol.server import handle
from loomcheck.reference.driver import ReferenceDriver

MODE = sys.argv[1]
EVERY_PROCESS = sys.argv[2:3] == ["every-process"]
STORE = os.environ.get("LOOMCHECK_STORE_DIR")
STATE = Path(STORE) / "stdio-fake-state.json" if STORE else None


def send(line: bytes) -> None:
    sys.stdout.buffer.write(line + b"\n")
    sys.stdout.buffer.flush()


# -- faults: (message, its correct response) -> what goes out instead ---------------
def hang(message: dict, response: dict) -> None:
    """Never answers: the harness's --timeout must fire, then SIGKILL."""
    if os.environ.get("STDIO_FAKE_HANGING"):
        Path(os.environ["STDIO_FAKE_HANGING"]).write_text(str(os.getpid()))
    while True:
        time.sleep(3600)


def crash(message: dict, response: dict) -> None:
    """Logs a few lines to stderr, then dies with status 3 in the middle of the request."""
    print("stdio-fake: starting the resume", file=sys.stderr)
    print(f"stdio-fake: cannot resume {message.get('execution')!r}: out of cheese", file=sys.stderr, flush=True)
    os._exit(3)


def garbage(message: dict, response: dict) -> None:
    """Answers with a line that is not JSON."""
    send(b"OK, resumed! (this is not JSON)")


def wrong_id(message: dict, response: dict) -> None:
    """Answers with the id of a request that was never sent."""
    send(wire.dumps({**response, "id": message["id"] + 1000}))


def oversized(message: dict, response: dict) -> None:
    """Answers with a 2 MiB line (the test passes --max-line 1048576)."""
    send(wire.dumps({**response, "padding": "x" * (2 * 1024 * 1024)}))


def flood(message: dict, response: dict) -> None:
    """Answers, then prints 5 000 debug lines on stdout, in the same write: stdout is the protocol's."""
    lines = [wire.dumps(response)] + [b'{"debug":"resumed, line %d"}' % n for n in range(5_000)]
    send(b"\n".join(lines))


def exit_between(message: dict, response: dict) -> None:
    """Answers, then exits cleanly (status 0) before the next request."""
    send(wire.dumps(response))
    sys.exit(0)


def invalid(message: dict, response: dict) -> None:
    """Answers a read-log with events that lack their `seq` (the schema requires it)."""
    events = [{k: v for k, v in event.items() if k != "seq"} for event in response["result"]]
    send(wire.dumps({**response, "result": events}))


def deep(message: dict, response: dict) -> None:
    """Answers a read-log with its first event's payload nested 2 000 arrays deep."""
    payload: list | int = 0
    for _ in range(2_000):
        payload = [payload]
    events = [{**response["result"][0], "payload": payload}, *response["result"][1:]]
    send(wire.dumps({**response, "result": events}))


def bad_hello(message: dict, response: dict) -> None:
    """Answers hello in another version of the protocol."""
    send(wire.dumps({**response, "result": {**response["result"], "protocol": "loomcheck-driver/2"}}))


def lying_hello(message: dict, response: dict) -> None:
    """The first process exits after its first resume, so the harness starts another; the
    second one's hello (only the second's) gives another name and drops a feature."""
    if message["op"] == "resume":
        exit_between(message, response)
    hello = dict(response["result"], name="not-the-kernel-you-started")
    hello["features"] = [f for f in hello["features"] if f != "fold"]
    send(wire.dumps({**response, "result": hello}))


# mode -> (the op whose first request fires it, the fault)
FAULTS = {
    "hang": ("resume", hang),
    "crash": ("resume", crash),
    "garbage": ("resume", garbage),
    "wrong-id": ("resume", wrong_id),
    "oversized": ("resume", oversized),
    "flood": ("resume", flood),
    "exit-between": ("resume", exit_between),
    "invalid": ("read-log", invalid),
    "deep": ("read-log", deep),
    "bad-hello": ("hello", bad_hello),
    "lying-hello": ("resume", lying_hello),
}


# -- not faults: slower, or noisy on stderr, and correct -----------------------------
def slow(message: dict, response: dict) -> None:
    """Answers every request after 50 ms, well under any timeout: the run must pass, slower."""
    time.sleep(0.05)
    send(wire.dumps(response))


def stderr_flood(message: dict, response: dict) -> None:
    """Answers every request correctly, after writing 64 KiB of log to stderr (4 MiB at hello,
    some of it in one line with no end): the harness must drain stderr, keep its last lines, pass."""
    size = 4 * 1024 * 1024 if message["op"] == "hello" else 64 * 1024
    sys.stderr.write("x" * (size // 2) + "\n" + f"stdio-fake: log line for {message['op']}\n" * (size // 64))
    sys.stderr.flush()
    send(wire.dumps(response))


ALWAYS = {"slow": slow, "stderr-flood": stderr_flood}


# -- the state shared by the processes of one run ------------------------------------
def load_state() -> dict:
    try:
        return json.loads(STATE.read_text()) if STATE else {}
    except (OSError, ValueError):
        return {}


def save_state(state: dict) -> None:
    if STATE:
        STATE.write_text(json.dumps(state))


def main() -> None:
    if MODE not in FAULTS and MODE not in ALWAYS:
        sys.exit(f"stdio-fake: unknown mode {MODE!r}; known: {', '.join([*FAULTS, *ALWAYS])}")
    if os.environ.get("STDIO_FAKE_PIDS"):
        with open(os.environ["STDIO_FAKE_PIDS"], "a") as pids:
            pids.write(f"{os.getpid()}\n")
    state = load_state()
    state["launches"] = launch = state.get("launches", 0) + 1
    save_state(state)
    fired = False if EVERY_PROCESS else state.get("fired", False)
    driver = ReferenceDriver(store="memory")
    features = frozenset(driver.hello().features)
    for raw in sys.stdin.buffer:
        message = wire.loads(raw)
        response = handle(driver, features, message)
        op = message.get("op")
        if MODE in ALWAYS:
            ALWAYS[MODE](message, response)
        elif MODE == "lying-hello" and op == "hello" and launch == 2:
            lying_hello(message, response)
        elif not fired and op == FAULTS[MODE][0] and (op != "read-log" or response.get("result")):
            fired = True
            save_state({**state, "fired": True})
            FAULTS[MODE][1](message, response)
        else:
            send(wire.dumps(response))
        if op == "shutdown":
            return


if __name__ == "__main__":
    main()
