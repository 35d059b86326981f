"""The approver's half of signed approvals (ADR 0117, decisions D1 and D2): the exact bytes an approver's
HMAC-SHA256 covers (`signing_input`), the signed event (`sign_resume`), the resume event for a
parked state (`answer_approval`) and the park it answers (`parked_at_sequence`).
reference/authenticator.py verifies what this signs; spec/signing.md is the normative text,
docs/approvals.md the design."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Union

from loomcheck.spec.canonical import MAX_DEPTH, MAX_SAFE_INTEGER, canonical_json

__all__ = [
    "MIN_SECRET_BYTES", "PURPOSE", "Secret", "Keys", "WeakSecretError", "signed_discard", "signing_input",
    "sign_resume", "answer_approval", "parked_at_sequence", "signed_binding",
]

JSON = Any
Secret = Union[str, bytes]
KeyMaterial = Union[Secret, Sequence[Secret]]
Keys = Union[Mapping[str, KeyMaterial], Callable[[str], Union[KeyMaterial, None]]]

PURPOSE = "loom.resume/1"   # domain separation: these bytes are a resume approval and nothing else
MIN_SECRET_BYTES = 16       # ADR 0117 D2: "Secrets under 16 bytes (empty included) are refused"
SUSPENDED = "EXECUTION_SUSPENDED"


class WeakSecretError(ValueError):
    """A secret under 16 bytes (UTF-8 length for a str; the empty secret included). ADR 0117 D2."""


# ------------------------------------------------------------------ signing


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _secret_bytes(secret: object) -> bytes:
    """One secret as bytes; WeakSecretError under 16 bytes, TypeError/ValueError if it is no secret."""
    if isinstance(secret, str):
        try:
            raw = secret.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a secret must be valid Unicode text (it has an unpaired surrogate)") from None
    elif isinstance(secret, (bytes, bytearray)):
        raw = bytes(secret)
    else:
        raise TypeError(f"a secret is str or bytes, not {type(secret).__name__}")
    if len(raw) < MIN_SECRET_BYTES:  # ADR 0117 D2
        raise WeakSecretError(f"a secret of {len(raw)} bytes; at least {MIN_SECRET_BYTES} are required")
    return raw


def secrets_of(material: object) -> tuple[bytes, ...]:
    """An actor's secrets: one, or several while a key rotates (any may verify)."""
    if isinstance(material, (str, bytes, bytearray)):
        return (_secret_bytes(material),)
    if isinstance(material, Sequence):
        return tuple(_secret_bytes(secret) for secret in material)
    raise TypeError(f"an actor's key is a secret or a list of secrets, not {type(material).__name__}")


def _require(condition: bool, error: type[Exception], message: str) -> None:
    if not condition:
        raise error(message)


_OVERRIDE_KEYS = frozenset({"stepId", "count"})


def signed_discard(value: object) -> Literal[False] | dict[str, JSON]:
    """The signed `discardLegacyAnswers` member (ADR 0104 D2, spec/signing.md section 2).

    No override (absent, so None here, null or false) is signed as `false`, the
    bytes every pre-0104 vector signed. An override is exactly the object
    `{"count": int >= 0, "stepId": non-empty str}` and is signed as a fresh copy of
    it. Anything else (true, a number, a string, other keys, a bool or float count,
    a count outside ±(2^53 - 1)) has no signed form: TypeError/ValueError, so the
    signer refuses it and a verifier rejects it as bad-signature."""
    if value is None or value is False:  # identity: 0 and 0.0 are not "no override"
        return False
    # ADR 0104 D2: the override is { stepId, count }; `true` carries no step and means nothing.
    _require(isinstance(value, dict), TypeError,
             "discardLegacyAnswers is false/absent or an object {stepId, count}, not " + type(value).__name__)
    _require(set(value) == _OVERRIDE_KEYS, ValueError,
             "discardLegacyAnswers has exactly the members stepId and count, not " + repr(sorted(map(str, value))))
    step_id, count = value["stepId"], value["count"]
    _require(isinstance(step_id, str) and step_id != "", TypeError,
             "discardLegacyAnswers.stepId must be a non-empty str")
    _require(is_int(count), TypeError, "discardLegacyAnswers.count must be an int (not a bool or a float)")
    _require(0 <= count <= MAX_SAFE_INTEGER, ValueError,
             "discardLegacyAnswers.count must be an integer in [0, 2**53 - 1]")
    return {"count": count, "stepId": step_id}


def signed_binding(resume_as: Mapping[str, JSON] | None, incarnation: int) -> dict[str, JSON]:
    """spec/signing.md section 10 (beyond ADR 0117 D2): the members that bind a proof to a
    resumeAs, `{"resumeAs": {"flowId", "transformState"}}`, and to the `incarnation`-th
    execution under its id, `{"incarnation": n}` from the second on. None of them for a plain
    resume of an execution never erased: D2's bytes exactly. TypeError/ValueError otherwise."""
    members: dict[str, JSON] = {}
    if resume_as is not None:
        _require(isinstance(resume_as, Mapping) and set(resume_as) <= {"flowId", "transformState"}, TypeError,
                 "resume_as is {flowId, transformState?}")
        flow = resume_as.get("flowId")
        _require(isinstance(flow, str) and flow != "", TypeError, "resume_as.flowId must be a non-empty str")
        # The transform as the caller sent it: what the target runs with is its outcome (ADR 0056 D1).
        members["resumeAs"] = {"flowId": flow, "transformState": resume_as.get("transformState")}
    _require(is_int(incarnation) and 1 <= incarnation <= MAX_SAFE_INTEGER, ValueError,
             "incarnation is an integer >= 1")
    if incarnation > 1:
        members["incarnation"] = incarnation
    return members


def signing_input(event: dict, *, actor: str, exp: int, execution_id: str, parked_at_sequence: int,
                  resume_as: Mapping[str, JSON] | None = None, incarnation: int = 1) -> bytes:
    """The exact bytes the HMAC covers: canonical JSON (spec/canonical-json.md) of the
    whole event and the park it answers, UTF-8 (ADR 0117 D2); for a resumeAs or a
    re-created execution, also the operation and the incarnation (`signed_binding`).
    An absent payload is null; discardLegacyAnswers is signed as `signed_discard`
    says (ADR 0104 D2). Raises TypeError/ValueError (CanonicalError for a payload
    with no canonical form) for anything unsignable."""
    _require(isinstance(event, dict), TypeError, "a resume event is a dict")
    _require(isinstance(event.get("type"), str), TypeError, "the event's type must be a str")
    # ADR 0104 D2: the authenticator MUST cover the override, not just the payload.
    discard = signed_discard(event.get("discardLegacyAnswers"))
    _require(isinstance(actor, str) and actor != "", TypeError, "actor must be a non-empty str")
    _require(is_int(exp), TypeError, "exp must be an int (milliseconds since the epoch)")
    _require(isinstance(execution_id, str) and execution_id != "", TypeError, "execution_id must be a non-empty str")
    _require(is_int(parked_at_sequence), TypeError, "parked_at_sequence must be an int")
    _require(parked_at_sequence >= 1, ValueError, "parked_at_sequence is the seq of an EXECUTION_SUSPENDED: >= 1")
    signed = {  # ADR 0117 D2: the whole event, the actor, the expiry and the one park it answers
        **signed_binding(resume_as, incarnation),  # spec/signing.md section 10
        "purpose": PURPOSE,
        "eventType": event["type"],
        "payload": event.get("payload"),
        "discardLegacyAnswers": discard,
        "actor": actor,
        "exp": exp,
        "executionId": execution_id,
        "parkedAtSequence": parked_at_sequence,
    }
    return canonical_json(signed).encode("utf-8")


def mac(secret: bytes, message: bytes) -> str:
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def sign_resume(event: dict, *, actor: str, secret: str | bytes, exp: int, execution_id: str,
                parked_at_sequence: int, resume_as: Mapping[str, JSON] | None = None, incarnation: int = 1) -> dict:
    """The approver's half: a copy of `event` carrying `proof` {actor, exp, signature}, for a
    plain resume, or for the resumeAs `resume_as` names ({flowId, transformState}); at the
    `incarnation`-th execution under its id (spec/signing.md section 10). Refuses a weak
    secret (WeakSecretError) and an unsignable event or missing park."""
    key = _secret_bytes(secret)  # ADR 0117 D2: signResume refuses a weak secret too
    message = signing_input(event, actor=actor, exp=exp, execution_id=execution_id,
                            parked_at_sequence=parked_at_sequence, resume_as=resume_as, incarnation=incarnation)
    signed = json_copy(event)
    signed["proof"] = {"actor": actor, "exp": exp, "signature": mac(key, message)}
    return signed


def json_copy(value: JSON) -> JSON:
    """A deep copy of dicts and lists without recursion (a payload may be MAX_DEPTH
    deep, past Python's recursion limit for copy.deepcopy); scalars are shared."""
    if not isinstance(value, (dict, list)):
        return value
    root: JSON = {} if isinstance(value, dict) else []
    stack: list[tuple[JSON, JSON, int]] = [(value, root, 1)]
    while stack:
        source, target, level = stack.pop()
        if level > MAX_DEPTH + 1:
            raise ValueError(f"nested deeper than {MAX_DEPTH}")
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            child = item
            if isinstance(item, (dict, list)):
                child = {} if isinstance(item, dict) else []
                stack.append((item, child, level + 1))
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root


# ------------------------------------------------------------- approver side


def answer_approval(state: Mapping[str, JSON], decision: Mapping[str, JSON]) -> dict:
    """ADR 0117 D1: the resume event for the PARKED state: `{type: on, payload:
    {...decision, viewDigest}}`, echoing the parked condition's digest exactly (v1: or
    v2:) when it declares one. Keep this state with the UI, so that "echoed" means
    "this is what I was shown". ValueError when the state is not suspended."""
    if hasattr(state, "to_json") and not isinstance(state, Mapping):
        state = state.to_json()  # a reference fold State
    if not isinstance(state, Mapping) or state.get("status") != "suspended":
        raise ValueError("only a suspended execution can be answered")
    condition = state.get("suspendedOn")
    if not isinstance(condition, Mapping) or not isinstance(condition.get("on"), str):
        raise ValueError("the state is suspended but names no gate (suspendedOn.on)")
    if not isinstance(decision, Mapping):
        raise TypeError("a decision is an object, e.g. {'approved': True}")
    payload = json_copy(dict(decision))
    if condition.get("viewDigest") is not None:
        payload["viewDigest"] = condition["viewDigest"]  # ADR 0117 D1: echoed exactly
    return {"type": condition["on"], "payload": payload}


def parked_at_sequence(events: Iterable[Any]) -> int | None:
    """ADR 0117 Round 2: the seq of the newest EXECUTION_SUSPENDED among `events`
    (dicts {seq, type, payload}, or objects with those attributes), else None. Never
    the folded tip: denials and parallel siblings trail the park."""
    newest: int | None = None
    for event in events:
        kind = event.get("type") if isinstance(event, Mapping) else getattr(event, "type", None)
        seq = event.get("seq") if isinstance(event, Mapping) else getattr(event, "seq", None)
        if kind == SUSPENDED and is_int(seq) and (newest is None or seq > newest):  # ADR 0117 Round 2
            newest = seq
    return newest
