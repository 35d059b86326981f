"""Scripts: sequences of driver operations, the suite's universal currency. The
state machine generates them, regression logs store them, replay re-runs them.

Each operation has a JSON form (`{"op": "resume", "execution": "x1", ...}`),
validated by pydantic where it crosses a boundary (regression files)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Union

from pydantic import BaseModel

from loomcheck.spec.regressions import (
    AdvanceClockModel,
    ConfigureModel,
    DefineModel,
    KillModel,
    LoadModel,
    RecoverAbandonedModel,
    RecoverModel,
    RestartModel,
    ResumeAsModel,
    ResumeModel,
    StartModel,
)

JSON = Any


@dataclass(frozen=True)
class Define:
    flow: str
    program: dict[str, JSON]
    op: str = field(default="define", init=False)


@dataclass(frozen=True)
class Start:
    execution: str
    flow: str
    input: JSON = None
    op: str = field(default="start", init=False)


@dataclass(frozen=True)
class Resume:
    execution: str
    type: str
    payload: JSON = None
    options: dict[str, JSON] | None = None  # {proof?, principal?, discardLegacyAnswers?} (ADR 0117 D2); resume-as: transformState? (ADR 0056)
    op: str = field(default="resume", init=False)


@dataclass(frozen=True)
class Recover:
    execution: str
    op: str = field(default="recover", init=False)


@dataclass(frozen=True)
class ResumeAs:
    execution: str
    flow: str
    type: str
    payload: JSON = None
    options: dict[str, JSON] | None = None
    op: str = field(default="resume-as", init=False)


@dataclass(frozen=True)
class RecoverAbandoned:
    op: str = field(default="recover-abandoned", init=False)


@dataclass(frozen=True)
class Restart:
    op: str = field(default="restart", init=False)


@dataclass(frozen=True)
class Load:
    execution: str
    events: list[dict[str, JSON]]
    snapshot: dict[str, JSON] | None = None
    op: str = field(default="load", init=False)


@dataclass(frozen=True)
class Configure:
    """The runtime's security config (ADR 0117 D2, D3), as ConfigureModel without "op"."""

    config: dict[str, JSON]
    op: str = field(default="configure", init=False)


@dataclass(frozen=True)
class AdvanceClock:
    ms: int
    op: str = field(default="advance-clock", init=False)


@dataclass(frozen=True)
class Kill:
    """SIGKILL the kernel's process and start it again on the same store (feature "durable");
    with `during`, while that operation runs, at its `after_appends`-th append (feature
    "kill-points") or just after it answers."""

    during: "Start | Resume | ResumeAs | Recover | None" = None
    after_appends: int | None = None
    op: str = field(default="kill", init=False)


Operation = Union[Define, Start, Resume, ResumeAs, Recover, RecoverAbandoned, Restart, Load, Configure, AdvanceClock, Kill]


def execution_of(op: Operation) -> str | None:
    return getattr(op, "execution", None)


def describe(op: Operation) -> str:
    """One line a person reads in a failing trace."""
    import json

    from loomcheck.spec.files import json_headroom

    def j(value: JSON) -> str:
        try:
            with json_headroom():
                text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except RecursionError:  # the bound-answers corpus sends a view 100 000 levels deep
            return "<nested too deep to show>"
        return text if len(text) <= 60 else text[:57] + "..."

    if isinstance(op, Define):
        return f"define {op.flow} = {j(op.program.get('body'))}"
    if isinstance(op, Start):
        return f"start {op.execution} of {op.flow} with {j(op.input)}"
    if isinstance(op, Resume):
        return f"resume {op.execution} with {op.type!r} {j(op.payload)}{_signed(op.options)}"
    if isinstance(op, ResumeAs):
        return f"resume {op.execution} as {op.flow} with {op.type!r} {j(op.payload)}{_signed(op.options)}"
    if isinstance(op, Configure):
        return f"configure {j(op.config)}"
    if isinstance(op, AdvanceClock):
        return f"advance the clock {op.ms} ms (due timers fire)"
    if isinstance(op, Recover):
        return f"recover {op.execution}"
    if isinstance(op, RecoverAbandoned):
        return "recover abandoned executions"
    if isinstance(op, Restart):
        return "restart the runtime (its memory is lost)"
    if isinstance(op, Kill):
        if op.during is None:
            return "kill the process (SIGKILL) and start it again on the same store"
        where = f"at its append #{op.after_appends}" if op.after_appends else "as it answers"
        return f"kill the process (SIGKILL) during [{describe(op.during)}], {where}; start it again on the same store"
    return f"load {op.execution}: {len(op.events)} events" + (" after a snapshot" if op.snapshot else "")


def _signed(options: dict[str, JSON] | None) -> str:
    if not options:
        return ""
    proof = options.get("proof")
    parts = []
    if isinstance(proof, dict):
        parts.append(f"signed by {proof.get('actor')!r}, exp {proof.get('exp')}")
    elif proof is not None:
        parts.append(f"proof {proof!r:.30}")
    if options.get("principal") is not None:
        parts.append(f"as principal {options.get('principal')!r:.40}")
    if options.get("discardLegacyAnswers"):
        parts.append("discarding legacy answers")
    if isinstance(options.get("transformState"), dict):
        parts.append("transforming the input with " + json.dumps(options["transformState"], ensure_ascii=False)[:60])
    return " (" + "; ".join(parts) + ")" if parts else ""


# -- JSON form (the models live with the regression-log format in spec/) --------
def from_model(model: BaseModel) -> Operation:
    if isinstance(model, DefineModel):
        return Define(model.flow, model.program)
    if isinstance(model, StartModel):
        return Start(model.execution, model.flow, model.input)
    if isinstance(model, ResumeModel):
        return Resume(model.execution, model.type, model.payload, _options(model.options))
    if isinstance(model, RecoverModel):
        return Recover(model.execution)
    if isinstance(model, ResumeAsModel):
        return ResumeAs(model.execution, model.flow, model.type, model.payload, _options(model.options))
    if isinstance(model, ConfigureModel):
        return Configure(model.model_dump(exclude={"op"}, exclude_defaults=True))
    if isinstance(model, AdvanceClockModel):
        return AdvanceClock(model.ms)
    if isinstance(model, RecoverAbandonedModel):
        return RecoverAbandoned()
    if isinstance(model, RestartModel):
        return Restart()
    if isinstance(model, LoadModel):
        return Load(model.execution, [e.model_dump() for e in model.events], model.snapshot)
    if isinstance(model, KillModel):
        during = from_model(model.during) if model.during is not None else None
        return Kill(during, model.afterAppends)  # type: ignore[arg-type]
    raise TypeError(model)


def _options(model: BaseModel | None) -> dict[str, JSON] | None:
    if model is None:
        return None
    options = model.model_dump(exclude_defaults=True)
    if options.get("discardLegacyAnswers") is False:
        del options["discardLegacyAnswers"]  # logs written before ADR 0104 D2's override held false: no override
    return options or None


def to_json(op: Operation) -> dict[str, JSON]:
    if isinstance(op, Define):
        return {"op": "define", "flow": op.flow, "program": op.program}
    if isinstance(op, Start):
        return {"op": "start", "execution": op.execution, "flow": op.flow, "input": op.input}
    if isinstance(op, Resume):
        data = {"op": "resume", "execution": op.execution, "type": op.type, "payload": op.payload}
        return {**data, "options": op.options} if op.options else data
    if isinstance(op, ResumeAs):
        data = {"op": "resume-as", "execution": op.execution, "flow": op.flow, "type": op.type, "payload": op.payload}
        return {**data, "options": op.options} if op.options else data
    if isinstance(op, Configure):
        return {"op": "configure", **op.config}
    if isinstance(op, AdvanceClock):
        return {"op": "advance-clock", "ms": op.ms}
    if isinstance(op, Recover):
        return {"op": "recover", "execution": op.execution}
    if isinstance(op, (RecoverAbandoned, Restart)):
        return {"op": op.op}
    if isinstance(op, Kill):
        kill: dict[str, JSON] = {"op": "kill"}
        if op.during is not None:
            kill["during"] = to_json(op.during)
        if op.after_appends is not None:
            kill["afterAppends"] = op.after_appends
        return kill
    data: dict[str, JSON] = {"op": "load", "execution": op.execution, "events": op.events}
    if op.snapshot is not None:
        data["snapshot"] = op.snapshot
    return data
