"""Hypothesis strategies for flow programs, answers, verdicts and inputs.

Programs only use what the implementation declares it supports (its features),
so an unsupported feature makes invariants not-applicable rather than failing."""

from __future__ import annotations

from typing import Any, Iterable

from hypothesis import strategies as st

from loomcheck.spec.programs import LANGUAGE
from loomcheck.spec.vocabulary import kernel_event_types, vocabulary

GATE_NAMES = ("go1", "go2", "go3", "approve")
HUMAN_GATES = ("HumanInput", "Approve")
HOSTILE_GATES = ("__proto__", "constructor", "__class__", "get", "")
VERDICTS = ("succeeded", "failed", "retry-fresh")
NOT_A_VERDICT = "not-a-verdict"  # an answer choice: send the raw payload to an in-doubt park
ALL_FEATURES = frozenset({"recover", "human-steps", "in-doubt", "parallel", "emit-guard", "input-validation",
                          "resume-schemas", "view-digest", "timers"})
TIMEOUTS = (1_000, 60_000)  # ms: a timed gate or a sleep
V1_DIGEST = "v1:00c0ffee00c0ffee"  # what a kernel before review round 1 parked with (64-bit FNV)
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "approvedBy": {"type": "string", "default": "unknown"}},
    "required": ["approved"],
}
OPEN_APPROVAL_SCHEMA: dict[str, Any] = {**APPROVAL_SCHEMA, "additionalProperties": True}
# ADR 0117 Consequences: "A flow's resumeSchemas entry for that gate must let viewDigest through."
DIGESTED_APPROVAL_SCHEMA: dict[str, Any] = {
    **APPROVAL_SCHEMA, "properties": {**APPROVAL_SCHEMA["properties"], "viewDigest": {"type": "string"}}}
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "n": {"type": "integer", "default": 0}},
    "required": ["id"],
}

json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)  # canonical JSON's range: programs have a code version
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
payloads = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
# Approvals as callers send them: sometimes well-formed, with an undeclared key or a wrong type.
approvals = st.fixed_dictionaries(
    {"approved": st.booleans() | st.sampled_from(["yes", 1])},
    optional={"approvedBy": st.sampled_from(["ann", "bob", 7]), "note": json_leaves},
)
answers = payloads | approvals  # what callers resume gates with
# What a gate shows an approver: JSON with a canonical form (spec/canonical-json.md: integers
# within ±(2**53 - 1)), so the flow defines; the refused views are the bound-answers corpus's.
views = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53 - 1), 2**53 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
gate_names = st.sampled_from(GATE_NAMES) | st.sampled_from(HOSTILE_GATES)
resume_names = st.sampled_from(GATE_NAMES + HOSTILE_GATES + HUMAN_GATES + ("EXECUTION_RECOVERED", "TIMER_FIRED"))
kernel_types = st.sampled_from(sorted(kernel_event_types()))
forbidden_types = st.sampled_from(sorted(kernel_event_types() - set(vocabulary().emit_guard.allowed)))
inputs = (st.sampled_from([{"id": "a"}, {"id": "b", "n": 3}, {"n": "x"}, {"id": 7}, None])
          | st.sampled_from([{"id": "a"}, {"id": "b", "n": 3}]) | payloads)  # often the shape ADR 0056 migrates
verdict_resolutions = st.sampled_from(VERDICTS + ("maybe",))
DECISION_IDS = ("d1", "d2", "__loom_indoubt__:s0:1", "__loom_discard__:h")


@st.composite
def kernel_emits(draw: st.DrawFn, counter: list[int]) -> dict[str, Any]:
    """Emits that exercise the guard: forged kernel facts, valid and invalid
    allowed ones, and decisions (distinctive payloads, so a forged fact that
    reaches the log can be told from one the kernel wrote)."""
    counter[0] += 1
    kind = draw(st.sampled_from(("forged", "meter", "quota", "audit", "decision")))
    if kind == "forged":
        return {"type": draw(forbidden_types), "payload": {"forged": counter[0]}}
    if kind == "meter":
        value = draw(st.sampled_from([5, -1, 1e13, "5"]))  # mostly invalid: the guard's refusals are the point
        return {"type": "RESOURCE_METERED", "payload": {draw(st.sampled_from(("tokens", "costUsd", "ms"))): value}}
    if kind == "quota":
        return {"type": "QUOTA_EXCEEDED", "payload": {"reason": "q" * draw(st.sampled_from([3, 1024, 1025]))}}
    if kind == "audit":
        return {"type": draw(st.sampled_from(vocabulary().emit_guard.audit)),
                "payload": draw(st.sampled_from([{"n": counter[0]}, [counter[0]]]))}
    return {"type": "DECISION_RECORDED",
            "payload": {"decisionId": draw(st.sampled_from(DECISION_IDS)), "choice": draw(st.integers(0, 2))}}


@st.composite
def programs(draw: st.DrawFn, min_gates: int = 0, features: Iterable[str] = ALL_FEATURES,
             rich: bool = False) -> dict[str, Any]:
    """Linear programs: gates (each followed by observe), steps of the supported
    kinds with crash faults and effect emits, human steps, parallels of gates or
    of human steps (never mixed: that is the documented hazard), decisions and emits."""
    has = frozenset(features)
    kinds = ["gate", "gate", "step", "emit"]
    kinds += ["human"] if "human-steps" in has else []
    kinds += ["parallel"] if "parallel" in has else []
    kinds += ["decide"] if "emit-guard" in has else []
    kinds += ["sleep"] if "timers" in has else []
    chosen = draw(st.lists(st.sampled_from(kinds), max_size=7))
    chosen = ["gate"] * max(0, min_gates - chosen.count("gate")) + chosen
    if rich:
        # Each supported situation in about half the examples; each a boolean, so the
        # shrinker drops it from a counterexample that does not need it.
        chosen += ["crashing-step"] if "recover" in has and draw(st.booleans()) else []
        chosen += ["human"] if "human-steps" in has and "human" not in chosen and draw(st.booleans()) else []
        chosen += ["guarded-emit"] if "emit-guard" in has and draw(st.booleans()) else []
    if min_gates or rich:
        chosen = draw(st.permutations(chosen))
    counter = [0]
    body: list[dict[str, Any]] = []
    for index, kind in enumerate(chosen):
        if kind == "gate":
            body += [draw(gates(has)), {"op": "observe"}]
        elif kind == "sleep":
            body += [{"op": "sleep", "ms": draw(st.sampled_from(TIMEOUTS))}, {"op": "observe"}]
        elif kind == "step":
            body.append(draw(effect_steps(f"s{index}", has, counter)))
        elif kind == "guarded-emit":
            body.append({"op": "emit", **draw(kernel_emits(counter))})
        elif kind == "crashing-step":
            step = draw(effect_steps(f"s{index}", has, counter, crash=True))
            if "in-doubt" in has:  # the case ADR 0104 is about: a non-idempotent attempt that may have acted
                step["kind"] = "non-idempotent"
                step["crash"]["attempts"] = draw(st.sampled_from([[1], [1, 2]]))
            body.append(step)
        elif kind == "human":
            body += [{"op": "step", "id": f"h{index}", "kind": "human", "on": draw(st.sampled_from(HUMAN_GATES))},
                     {"op": "observe"}]
        elif kind == "parallel":
            if "human-steps" in has and draw(st.booleans()):
                branches = [{"op": "step", "id": f"h{index}.{b}", "kind": "human", "on": draw(st.sampled_from(HUMAN_GATES))}
                            for b in range(2)]
            else:
                branches = [{"op": "suspend", "on": draw(gate_names)} for _ in range(draw(st.integers(2, 3)))]
            body += [{"op": "parallel", "branches": branches}, {"op": "observe"}]
        elif kind == "decide":
            body.append({"op": "decide", "id": draw(st.sampled_from(DECISION_IDS[:3])), "choice": draw(st.integers(0, 2))})
        elif "emit-guard" in has and draw(st.integers(0, 3)) == 0:
            body.append({"op": "emit", **draw(kernel_emits(counter))})
        else:
            body.append({"op": "emit", "type": draw(st.sampled_from(("app.note", "app.audit"))), "payload": draw(payloads)})
    if draw(st.booleans()):
        body.append({"op": "complete", "output": draw(payloads)})
    if "state-migration" in has:
        body.insert(0, {"op": "input"})  # first, so every run records the input it was handed (ADR 0056 D2)
    program: dict[str, Any] = {"language": LANGUAGE, "body": body}
    if "input-validation" in has and draw(st.integers(0, 3)) == 0:
        program["inputSchema"] = INPUT_SCHEMA
        program["validateInput"] = True
    if "resume-schemas" in has:
        names = sorted({op["on"] for op in body if op["op"] == "suspend"})
        declared = {name: draw(st.sampled_from([APPROVAL_SCHEMA, OPEN_APPROVAL_SCHEMA]))
                    for name in names if draw(st.integers(0, 2)) == 0}
        if declared:
            program["resumeSchemas"] = declared
    return program


@st.composite
def gates(draw: st.DrawFn, has: frozenset[str]) -> dict[str, Any]:
    """A suspend: sometimes showing a proposal (its digest recorded, ADR 0117 D1), or
    declaring an older kernel's v1: digest, or timed (woken by TIMER_FIRED, D5)."""
    gate: dict[str, Any] = {"op": "suspend", "on": draw(gate_names)}
    if "human-steps" in has and draw(st.integers(0, 5)) == 0:
        gate["meta"] = {"stepId": "forged-step", "note": "a caller may not name the parked step"}
    if "view-digest" in has:
        shown = draw(st.sampled_from(("none", "none", "view", "view", "v1")))
        if shown == "view":
            gate["view"] = draw(views)
        elif shown == "v1":
            gate["viewDigest"] = V1_DIGEST
    if "timers" in has and draw(st.integers(0, 2)) == 0:
        gate["timeout"] = draw(st.sampled_from(TIMEOUTS))
    return gate


@st.composite
def effect_steps(draw: st.DrawFn, step_id: str, has: frozenset[str], counter: list[int],
                 crash: bool = False) -> dict[str, Any]:
    step: dict[str, Any] = {"op": "step", "id": step_id, "output": draw(payloads)}
    if "in-doubt" in has and draw(st.booleans()):
        step["kind"] = "non-idempotent"
    if "recover" in has and (crash or draw(st.integers(0, 2)) == 0):
        step["crash"] = {"at": draw(st.sampled_from(("before-effect", "after-effect"))),
                         "attempts": draw(st.sampled_from([[1], [1, 2], [2]]))}
    if "emit-guard" in has and draw(st.integers(0, 3)) == 0:
        step["emits"] = [draw(kernel_emits(counter))]
    return step


# -- ADR 0056: state transforms and contract-evolving deploys -----------------------------
# The input contract a new version may declare: `id` renamed to `key` (the rename transform
# migrates {"id": ...} onto it; the parse transform fills `n` in).
EVOLVED_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"key": {"type": "string"}, "n": {"type": "integer", "default": 0}},
    "required": ["key"],
}
LEGACY_INPUT: dict[str, Any] = {"id": "a"}  # what the machine's purpose-built executions start with: v1's contract
WORKING_TRANSFORMS: tuple[dict[str, Any], ...] = (
    {"name": "rename", "from": "id", "to": "key"},
    {"name": "default", "field": "n", "value": 0},
    {"name": "wrap", "key": "legacy"},
    {"name": "parse"},
)
FAILING_TRANSFORMS: tuple[dict[str, Any], ...] = (
    {"name": "fail", "message": "the v1 input cannot be migrated"},
    {"name": "nothing"},
    {"name": "__proto__"},
    {"name": "rename", "from": 1, "to": "key"},
)


def evolved_resume_schemas(program: dict[str, Any]) -> dict[str, Any]:
    """A new version's answer contract: every gate of the old body now declares the approval
    shape (open, so a viewDigest passes), which the old version did not require."""
    from loomcheck.spec.names import TIMER_FIRED
    from loomcheck.spec.programs import FlowProgram

    try:
        names = FlowProgram.model_validate(program).gates()
    except ValueError:
        return {}
    return {name: OPEN_APPROVAL_SCHEMA for name in sorted(set(names) - {TIMER_FIRED})}


# Mostly transforms that work (on an object input), so migrations happen and are judged.
transforms = st.sampled_from(WORKING_TRANSFORMS * 3 + FAILING_TRANSFORMS)


# -- ADR 0117: who may approve, and how the machine signs --------------------------------
APPROVERS: dict[str, list[str] | str] = {
    "ann": ["ann-retired-secret-01", "ann-current-secret-02"],  # key rotation: either verifies
    "bob": "bob-only-secret-0003",
}
AUTHENTICATED_GATES = ["go1", "go2", "approve", "Approve"]  # most gates; go3, HumanInput and the rest are not-applicable
AUTHENTICATOR = {"gates": AUTHENTICATED_GATES, "keys": APPROVERS}
SECURITY_CONFIGS: dict[str, dict[str, Any]] = {
    "permissive with an authenticator": {"authenticator": AUTHENTICATOR},
    "strict with an authenticator": {"strict": True, "authenticator": AUTHENTICATOR},
    "strict, absence acknowledged": {"strict": True, "requireResumeAuthenticator": False},
    "strict without an authenticator": {"strict": True},                     # refused
    "a 15-byte secret": {"authenticator": {"gates": AUTHENTICATED_GATES,
                                           "keys": {"ann": "fifteen-bytes!!"}}},   # refused
    "an empty secret in a rotation": {"authenticator": {"gates": AUTHENTICATED_GATES,
                                                        "keys": {"ann": ["ann-current-secret-02", ""]}}},  # refused
    "a 16-byte secret": {"authenticator": {"gates": AUTHENTICATED_GATES, "keys": {"ann": "sixteen-bytes!!!"},
                                           "requireActor": False}},
}
# How often the machine composes each: mostly with an authenticator, so approvals get judged.
# None first: the shrinker drops the configuration from a counterexample that does not need it.
SECURITY_CHOICES = ([None] + ["permissive with an authenticator"] * 4 + ["strict with an authenticator"] * 2
                    + sorted(SECURITY_CONFIGS))
# One thing wrong with an approval at a time (or nothing), so a failure says which.
APPROVAL_FAULTS = ("none", "none", "none", "retired key", "bob signs", "principal is the signer", "wrong key",
                   "unknown actor", "no proof", "another execution", "an earlier park", "a later park",
                   "an earlier park", "a later park",  # the binding to one park: weighted, it is D2's point
                   "digest omitted", "digest stale", "expired", "expires now", "principal is bob", "payload altered",
                   "gate altered", "discard flag added")
# (who signs, with which secret): the right keys, a retired one, a wrong one, an unknown actor, or nobody.
SIGNERS: dict[str, tuple[str, str] | None] = {
    "ann": ("ann", "ann-current-secret-02"),
    "ann, retired key": ("ann", "ann-retired-secret-01"),
    "bob": ("bob", "bob-only-secret-0003"),
    "ann, wrong key": ("ann", "not-anns-secret-at-all"),
    "mallory": ("mallory", "mallory-secret-00004"),
    "nobody": None,
}
