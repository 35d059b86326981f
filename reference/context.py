"""The replaying flow context: what a flow's calls do on a run. Built from the folded state at
the start of each run (a flow re-runs from the top on every resume), it replays recorded steps
and runs the others, passes the i-th suspend point with the i-th recorded answer and parks at
the first one past them, and appends emits through the emit guard (docs/runtime.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from loomcheck.reference.emitguard import EffectScope, check_decide, guard
from loomcheck.reference.errors import EmitRefusedError
from loomcheck.reference.events import JSON, Event, copy_json
from loomcheck.reference.fold import State
from loomcheck.spec.canonical import view_digest
from loomcheck.spec.names import DISCARD_DECISION_PREFIX, INDOUBT_DECISION_PREFIX, IN_DOUBT_GATE
from loomcheck.spec.programs import StepOp

Append = Callable[[str, JSON], Event]
VERDICTS = ("succeeded", "failed", "retry-fresh")


class Park(Exception):
    """The run reached a suspend point with no answer left: record the park, stop."""

    def __init__(self, condition: dict[str, JSON], human: bool = False) -> None:
        super().__init__(condition.get("on"))
        self.condition = condition
        self.human = human  # a human effect throws synchronously inside its step


class WorkerCrashed(Exception):
    """A fault point fired: the worker dies here; nothing more is appended."""


class StepFailed(Exception):
    def __init__(self, step_id: str, error: JSON) -> None:
        super().__init__(step_id)
        self.step_id = step_id
        self.error = error


@dataclass(frozen=True)
class Passed:
    """A suspend point this run got past: its position among the program's suspend
    points in call order (what observe reports), its name and the value it got."""

    index: int
    on: str
    value: JSON


def fact_key(event_type: str, payload: JSON) -> str:
    return event_type + "\x00" + json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def indoubt_decision_id(step_id: str, attempt: int) -> str:
    return f"{INDOUBT_DECISION_PREFIX}:{step_id}:{attempt}"


def discard_decision_id(step_id: str) -> str:
    """ADR 0104 D2: the operator override's decision, in the reserved namespace."""
    return f"{DISCARD_DECISION_PREFIX}:{step_id}"


def is_verdict_for(payload: JSON, step_id: str) -> bool:
    return isinstance(payload, dict) and payload.get("stepId") == step_id and payload.get("resolution") in VERDICTS


class World:
    """The outside world effects act on: a ledger of every effect execution.
    It survives crashes of the worker (it is not the worker's memory)."""

    def __init__(self) -> None:
        self.ledger: list[dict[str, JSON]] = []

    def perform(self, execution_id: str, step_id: str, attempt: int) -> None:
        self.ledger.append({"execution": execution_id, "stepId": step_id, "attempt": attempt})

    def of(self, execution_id: str) -> list[dict[str, JSON]]:
        return [dict(e) for e in self.ledger if e["execution"] == execution_id]


class FlowContext:
    def __init__(self, state: State, events: list[Event], append: Append, world: World | None = None,
                 execution_id: str = "") -> None:
        self.state = state
        self._append = append
        self.world = world or World()
        self.execution_id = execution_id
        self._consumed = 0
        self.discarded: set[str] = set()  # human steps whose override this run has applied
        self._events = events
        self._fact_keys: set[str] | None = None
        self.decisions: dict[str, JSON] = dict(state.variables.get("_decisions") or {})
        self.passed: list[Passed] = []
        self.observed = 0
        self.points: dict[int, int] = {}  # id(op) -> position among the program's suspend points (set by the interpreter)
        self.now = 0  # the runtime's clock (ms) when this run began: timed parks wake at now + timeout
        # ADR 0056 D2: the runner is handed the FOLDED _input, which a migration may have replaced.
        self.input: JSON = copy_json(state.variables.get("_input"))

    @property
    def _facts(self) -> set[str]:
        """The facts the log holds, keyed for emit's dedupe. Built on the first emit only:
        a key is canonical JSON of the payload, the dearest thing a run would otherwise
        compute for every event of a long log (bench/scanner.py, the whole resume)."""
        if self._fact_keys is None:
            self._fact_keys = {fact_key(e.type, e.payload) for e in self._events}
        return self._fact_keys

    # -- answers ---------------------------------------------------------------
    def answers(self) -> list[JSON]:
        """The ordered answer list. Legacy fallback (ADR 0057): a pre-1.16 snapshot
        folded only `_resumePayload`; it is read as a one-entry list."""
        variables = self.state.variables
        if "_resumePayloads" in variables:
            return variables["_resumePayloads"]
        if "_resumePayload" in variables:
            return [variables["_resumePayload"]]  # ADR 0057 Legacy fallback: one entry
        return []

    def take_answer(self) -> tuple[int, JSON] | None:
        """The next entry in call order, if one is recorded."""
        answers = self.answers()
        index = self._consumed
        if index < len(answers):  # ADR 0057 Decision, Consequences: suspend point i takes entry i
            self._consumed += 1
            return index, answers[index]
        return None

    @staticmethod
    def digest_of(view: JSON) -> str:
        """ADR 0117 D1: v2: + SHA-256 of the view's canonical JSON (spec/canonical-json.md)."""
        return view_digest(view)

    def suspend(self, on: str, meta: dict[str, JSON] | None = None, point: int | None = None,
                view_digest: str | None = None, timeout: int | None = None) -> JSON:
        taken = self.take_answer()
        if taken is not None:
            self.passed.append(Passed(taken[0] if point is None else point, on, taken[1]))
            return taken[1]
        # ADR 0057 Decision: a gate beyond the recorded answers parks. ADR 0104 D2: only the kernel sets stepId.
        condition = {k: v for k, v in (meta or {}).items() if k != "stepId"}
        condition["on"] = on
        if view_digest is not None:
            condition["viewDigest"] = view_digest  # ADR 0117 D1: durable and fold-visible, no new event
        if timeout is not None:
            condition["wakeAt"] = self.now + timeout  # ADR 0117 D5: the timer's wake carries exactly this
        raise Park(condition)

    # -- steps -----------------------------------------------------------------
    def run(self, op: StepOp) -> JSON:
        if op.kind == "human":
            return self.human(op, self.points.get(id(op)))
        frame = self.state.steps.get(op.id)
        if frame is not None and frame.get("status") == "completed":
            return frame.get("output")  # ADR 0057 Context: a recorded step replays from its frame
        attempt = 1
        if frame is not None:
            previous = int(frame.get("attempt") or 1)
            if op.kind == "idempotent":
                attempt = previous + 1
            else:
                resolved = self.in_doubt(op, frame, previous)
                if resolved is not None:
                    return resolved[1]
                attempt = previous + 1  # retry-fresh
        return self._attempt(op, attempt)

    def _attempt(self, op: StepOp, attempt: int) -> JSON:
        self._append("STEP_STARTED", {"stepId": op.id, "attempt": attempt})
        crash = op.crash
        if crash is not None and crash.at == "before-effect" and attempt in crash.attempts:
            raise WorkerCrashed(f"{op.id} attempt {attempt}: before the effect")
        self.world.perform(self.execution_id, op.id, attempt)
        scope = EffectScope(op.id, attempt)
        try:
            for emitted in op.emits:
                self.emit(emitted.type, emitted.payload, scope)
        except EmitRefusedError as refused:
            self._append("STEP_FAILED", {"stepId": op.id, "error": {"type": refused.error, "reason": refused.reason,
                                                                     "message": refused.message}})
            raise StepFailed(op.id, {"type": refused.error, "reason": refused.reason}) from None
        if crash is not None and crash.at == "after-effect" and attempt in crash.attempts:
            raise WorkerCrashed(f"{op.id} attempt {attempt}: after the effect, before its completion")
        self._append("STEP_COMPLETED", {"stepId": op.id, "output": op.output})
        return op.output

    def in_doubt(self, op: StepOp, frame: dict[str, JSON], attempt: int) -> tuple[str, JSON] | None:
        """A non-idempotent attempt that started and never completed may have acted.
        Apply the verdict for THIS attempt, or record the doubt and park (ADR 0104 D1).
        Returns ("done", output) when resolved, None for a retry-fresh."""
        verdict = self.verdict(op.id, attempt, frame)
        if verdict is None:  # ADR 0104 D1: an attempt no verdict answered is in doubt, and parks
            if frame.get("inDoubtAttempt") != attempt:
                self._append("EFFECT_INDOUBT", {"stepId": op.id, "attempt": attempt})
            raise Park({"on": IN_DOUBT_GATE, "stepId": op.id, "attempt": attempt})
        resolution = verdict.get("resolution")
        if resolution == "succeeded":
            output = verdict.get("output")
            self._append("STEP_COMPLETED", {"stepId": op.id, "output": output})
            return ("done", output)
        if resolution == "failed":
            error = {"type": "EffectFailed", "reason": "in-doubt verdict: failed"}
            self._append("STEP_FAILED", {"stepId": op.id, "error": error})
            raise StepFailed(op.id, error)
        return None

    def verdict(self, step_id: str, attempt: int, frame: dict[str, JSON]) -> dict[str, JSON] | None:
        """The verdict for this step's CURRENT attempt only, and only beside the
        kernel's own EFFECT_INDOUBT for that attempt (ADR 0104 D1)."""
        if frame.get("inDoubtAttempt") != attempt:
            return None
        choice = self.decisions.get(indoubt_decision_id(step_id, attempt))  # ADR 0104 D1: keyed by attempt
        if is_verdict_for(choice, step_id):
            return choice
        # ADR 0104 D1, a pre-0104 verdict: the latest _resumePayload, honoured only while the
        # step's latest EFFECT_INDOUBT fact is for the current attempt (checked above).
        legacy = self.state.variables.get("_resumePayload")
        return legacy if is_verdict_for(legacy, step_id) else None

    def human(self, op: StepOp, point: int | None = None) -> JSON:
        """A human step is a suspend point: it consumes its entry in call order,
        live and on replay, and takes an answer only once it has parked."""
        frame = self.state.steps.get(op.id)
        if frame is not None:
            self.discard_legacy(op.id)
        if frame is not None and frame.get("status") == "completed":
            taken = self.take_answer()  # ADR 0104 D1: consumed on replay, never served to a later gate
            index = point if point is not None else (taken[0] if taken else self._consumed)
            self.passed.append(Passed(index, op.on, frame.get("output")))
            return frame.get("output")
        if frame is not None:  # ADR 0104 D1: a human step takes an answer only once it has parked
            taken = self.take_answer()
            if taken is not None:
                self._append("STEP_COMPLETED", {"stepId": op.id, "output": taken[1]})
                self.passed.append(Passed(taken[0] if point is None else point, op.on, taken[1]))
                return taken[1]
        else:
            self._append("STEP_STARTED", {"stepId": op.id, "attempt": 1})
        raise Park({"on": op.on, "stepId": op.id}, human=True)  # ADR 0104 D2: the park names its step

    def discard_legacy(self, step_id: str) -> None:
        """ADR 0104 D2, the operator override: at this step, discard `count` entries
        before the step takes its answer, live and on every replay (once per run)."""
        count = self.decisions.get(discard_decision_id(step_id))  # ADR 0104 D2: the operator's override
        if type(count) is int and count > 0 and step_id not in self.discarded:
            self.discarded.add(step_id)
            self._consumed += count

    # -- decisions and emits ---------------------------------------------------
    def decide(self, decision_id: str, choice: JSON) -> JSON:
        check_decide(decision_id)  # before the replay lookup
        if decision_id in self.decisions:
            return self.decisions[decision_id]
        self.emit("DECISION_RECORDED", {"decisionId": decision_id, "choice": choice, "source": "flow"})
        return choice

    def emit(self, event_type: str, payload: JSON, scope: EffectScope | None = None) -> None:
        event_type, plain = guard(event_type, payload, self.decisions, scope)  # ADR 0104 D1: the emit guard
        key = fact_key(event_type, plain)
        if key in self._facts:
            return
        self._append(event_type, plain)
        self._facts.add(key)
        if event_type == "DECISION_RECORDED":
            self.decisions[plain["decisionId"]] = plain.get("choice")
