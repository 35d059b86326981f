"""Decoding a z3 model of the gate relation (symbolic/gate_relation.py) into the lines a
person reads: each copy's state, each action, and the invariant's conjuncts it breaks."""

from __future__ import annotations

from dataclasses import dataclass

import z3

from loomcheck.symbolic.gate_relation import (NO_CRASH, NOWHERE, RECOVERY_NAME, RECOVERY_VALUE, RESUME, START, STATUS,
                                              Choice, Copy)


def _int(model: z3.ModelRef, term: z3.ExprRef) -> int:
    value = model.eval(term, model_completion=True)
    return value.as_long() if isinstance(value, z3.IntNumRef) else 0


def _bool(model: z3.ModelRef, term: z3.ExprRef) -> bool:
    return z3.is_true(model.eval(term, model_completion=True))


@dataclass(frozen=True)
class Decoded:
    """One copy of the state as the model gives it (entries and observations up to a limit)."""

    gates: int
    status: str
    n: int
    park: int
    entries: tuple[tuple[int, int, int], ...]      # (value, at, named)
    observed: tuple[tuple[int, int], ...]          # (gate, value)
    ran: int


def decode(model: z3.ModelRef, G: z3.ArithRef, s: Copy, limit: int = 6) -> Decoded:
    n = _int(model, s.n)
    shown = range(max(0, min(n + 1, limit)))
    entries = tuple((_int(model, s.values[j]), _int(model, s.at[j]), _int(model, s.named[j])) for j in shown if j < n)
    candidates = sorted({_int(model, s.values[j]) for j in shown} | {RECOVERY_VALUE})
    observed = tuple((j, v) for j in range(limit) for v in candidates if _bool(model, s.observed[j, v]))
    status = _int(model, s.status)
    return Decoded(_int(model, G), STATUS.get(status, f"status {status}"), n, _int(model, s.park), entries, observed,
                   _int(model, s.ran))


def broken(state: Decoded) -> list[str]:
    """The conjuncts of Inv the decoded state breaks, judged again in Python (so the
    report does not rest on evaluating array equalities in a model)."""
    found = []
    if any(j >= state.n or j >= len(state.entries) or state.entries[j][0] != v for j, v in state.observed):
        found.append("gate.i-receives-entry-i")
    if any(at != j for j, (_, at, _) in enumerate(state.entries)):
        found.append("answer.one-suspend-point")
    if any(named != j for j, (_, _, named) in enumerate(state.entries)):
        found.append("answer.addressed-while-parked")
    if (state.status == "completed" and state.n != state.gates) or \
            (state.status == "parked" and not state.park == state.n < state.gates):
        found.append("gate.completes-after-n-answers")
    if state.status == "crashed" and not (state.n <= state.gates and state.ran == state.n):
        found.append("model.answers-equal-gates-passed")
    return found


def show_copy(state: Decoded) -> str:
    park = f" at g{state.park + 1}" if state.status == "parked" else ""
    entries = []
    for value, at, named in state.entries:
        where = "no park" if at == NOWHERE else f"park g{at + 1}"
        who = "EXECUTION_RECOVERED" if named == RECOVERY_NAME else f"g{named + 1}"
        entries.append(f"{value} (recorded at {where}, named {who})")
    more = " ..." if len(state.entries) < state.n else ""
    seen = ", ".join(f"g{j + 1}:{v}" for j, v in state.observed)
    return (f"{state.status}{park}, {state.n} answer(s) [{'; '.join(entries)}{more}], observed [{seen}], "
            f"steps completed {state.ran}")


def show_choice(model: z3.ModelRef, a: Choice) -> str:
    kind, crash = _int(model, a.kind), _int(model, a.crash)
    dies = f", worker dies in step s{crash}" if crash != NO_CRASH else ""
    if kind == START:
        return f"start{dies}"
    if kind == RESUME:
        name = _int(model, a.name)
        return f"resume {f'g{name + 1}' if name >= 0 else f'a wrong name ({name})'} with {_int(model, a.value)}{dies}"
    return f"recover{dies}"


def decode_trace(model: z3.ModelRef, G: z3.ArithRef, copies: list[Copy], actions: list[Choice]) -> list[str]:
    lines = [f"G = {_int(model, G)} gate(s)"]
    for index, action in enumerate(actions):
        lines.append(f"{index + 1}. {show_choice(model, action)} -> {show_copy(decode(model, G, copies[index + 1]))}")
    lines.append(f"violates: {', '.join(broken(decode(model, G, copies[-1]))) or '(beyond the decoded entries)'}")
    return lines


def decode_step(model: z3.ModelRef, G: z3.ArithRef, s: Copy, a: Choice, t: Copy) -> list[str]:
    after = decode(model, G, t)
    return [f"G = {_int(model, G)} gate(s)", f"from a state satisfying I: {show_copy(decode(model, G, s))}",
            f"action: {show_choice(model, a)}", f"to: {show_copy(after)}",
            f"which leaves I; Inv broken: {', '.join(broken(after)) or 'no, only the strengthening'}"]

