"""Hypothesis strategies for flow programs, answers and inputs."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from loomcheck.spec.programs import LANGUAGE
from loomcheck.spec.vocabulary import kernel_event_types

GATE_NAMES = ("go1", "go2", "go3", "approve")
HOSTILE_GATES = ("__proto__", "constructor", "__class__", "get", "")
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "n": {"type": "integer", "default": 0}},
    "required": ["id"],
}

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
payloads = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
gate_names = st.sampled_from(GATE_NAMES) | st.sampled_from(HOSTILE_GATES)
resume_names = st.sampled_from(GATE_NAMES + HOSTILE_GATES + ("EXECUTION_RECOVERED", "TIMER_FIRED"))
kernel_types = st.sampled_from(sorted(kernel_event_types()))
inputs = st.sampled_from([{"id": "a"}, {"id": "b", "n": 3}, {"n": "x"}, {"id": 7}, None]) | payloads


@st.composite
def programs(draw: st.DrawFn, min_gates: int = 0) -> dict[str, Any]:
    """Linear programs: gates (each followed by observe), steps, emits, and
    sometimes an explicit completion, an input schema, or a forbidden emit."""
    kinds = draw(st.lists(st.sampled_from(("gate", "gate", "step", "emit")), max_size=7))
    kinds = ["gate"] * max(0, min_gates - kinds.count("gate")) + kinds
    if min_gates:
        kinds = draw(st.permutations(kinds))
    body: list[dict[str, Any]] = []
    for index, kind in enumerate(kinds):
        if kind == "gate":
            body.append({"op": "suspend", "on": draw(gate_names)})
            body.append({"op": "observe"})
        elif kind == "step":
            body.append({"op": "step", "id": f"s{index}", "output": draw(payloads)})
        elif draw(st.integers(0, 9)) == 0:
            body.append({"op": "emit", "type": draw(kernel_types), "payload": draw(payloads)})
        else:
            body.append({"op": "emit", "type": draw(st.sampled_from(("app.note", "app.audit"))), "payload": draw(payloads)})
    if draw(st.booleans()):
        body.append({"op": "complete", "output": draw(payloads)})
    program: dict[str, Any] = {"language": LANGUAGE, "body": body}
    if draw(st.integers(0, 3)) == 0:
        program["inputSchema"] = INPUT_SCHEMA
        program["validateInput"] = True
    return program
