"""Reading DBOS's own records: where a workflow is parked (its operation_outputs rows), how it
failed, its checkpoints as plain rows; and the constants the adapter and its worker share.
Part of the DBOS glue (NOTES.md), rendered into every DBOS reproducer."""

from __future__ import annotations

from typing import Any, Callable

from loomcheck.peers.walker import EmitRefused, condition_of

JSON = Any

TEN_YEARS = 10 * 365 * 24 * 3600.0  # recv's timeout: a timeout would checkpoint a None answer
APP_VERSION = "loomcheck-dbos-1"   # fixed, so a relaunch recovers the workflows of the previous process
SETTLE_SECONDS = 30.0               # a run that neither parks nor ends within this is a finding
CRASH_EXIT = 70                     # the worker's exit status when a crash fault fires
MAX_LAUNCHES = 8                    # relaunches before an operation, while DBOS's recovery keeps crashing
TERMINAL_EVENTS = ("EXECUTION_COMPLETED", "EXECUTION_FAILED")
STOPPED_EVENTS = ("EXECUTION_SUSPENDED",) + TERMINAL_EVENTS


def gates_of(program: dict[str, JSON]) -> list[dict[str, JSON]]:
    """The program's suspend points in call order (no human steps or parallel: not mapped)."""
    return [op for op in program["body"] if op["op"] == "suspend"]


def park_of(steps: list[dict[str, JSON]], program: dict[str, JSON] | None,
            waiting: Callable[[str], bool] | None = None) -> tuple[int, dict[str, JSON]] | None:
    """(gate index, condition) when DBOS's checkpoints say the workflow is blocked in a recv.

    `steps` are DBOS's operation_outputs rows (list_workflow_steps), ordered by function id.
    recv checkpoints its timeout as `DBOS.sleep` at k+1 before it blocks, and itself at k only
    when it consumes a message; `waiting(topic)` says whether a message is already there."""
    if not steps or steps[-1]["function_name"] != "DBOS.sleep":
        return None
    recv_id = steps[-1]["function_id"] - 1
    if any(s["function_id"] == recv_id for s in steps):
        return None
    index = sum(1 for s in steps if s["function_name"] == "DBOS.recv")
    gates = gates_of(program) if program is not None else []
    if index >= len(gates):
        return None
    condition = condition_of(gates[index])
    if waiting is not None and waiting(gates[index]["on"]):
        return None  # a message is there: recv is about to consume it
    return index, condition


def error_of(error: JSON) -> dict[str, JSON] | None:
    """A DBOS-recorded workflow error as the driver's {type, message}."""
    if error is None:
        return None
    if isinstance(error, EmitRefused):  # the flow-program language's refused emit (ADR 0104 D1)
        return {"type": "EmitRefusedError", "reason": "kernel-type", "message": str(error)}
    return {"type": type(error).__name__, "message": str(error)}


def step_rows(steps: list[Any]) -> list[dict[str, JSON]]:
    return [{"function_id": s["function_id"], "function_name": s["function_name"], "output": s["output"],
             "error": s["error"]} for s in steps]
