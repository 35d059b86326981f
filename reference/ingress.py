"""The ingress of a resume: every check that refuses before anything is appended, in the
order docs/runtime.md gives (the gate, the payload's bounds, the binding, identity, the code,
legacy answers, shape), and what an admitted answer records. A part of the Runtime."""

from __future__ import annotations

from typing import Callable

from loomcheck.reference.authenticator import Verdict
from loomcheck.reference.context import indoubt_decision_id, is_verdict_for
from loomcheck.reference.errors import KernelRefusal, ResumePayloadValidationError, ResumeRefusedError
from loomcheck.reference.events import JSON, Event, NotJson, TooLarge, to_plain_json
from loomcheck.reference.fold import IN_DOUBT_GATE, State
from loomcheck.reference.legacy import Discard
from loomcheck.reference.limits import MAX_BYTES, MAX_DEPTH
from loomcheck.reference.security import ResumeOptions, Security
from loomcheck.spec.names import APPROVAL_GRANTED, TIMER_FIRED
from loomcheck.spec.parsing import Invalid, parse
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.vocabulary import kernel_event_types

Append = Callable[[str, JSON], Event]


class ResumeIngress:
    """The checks of a resume and a resumeAs, and the recording of what they admit."""

    flows: dict[str, FlowProgram]
    security: Security
    max_depth: int
    max_bytes: int

    def admit(self, execution_id: str, state: State, events: list[Event], event_type: str, answer: JSON,
              options: ResumeOptions, flow_id: str | None, pinned: bool = False,
              operation: dict[str, JSON] | None = None) -> tuple[JSON, Verdict | None, Discard | None]:
        """After the ingress gate, in order: the binding, identity, the code (a plain
        resume runs on the code it is pinned to), legacy answers, then shape (ADR 0077
        D3, ADR 0117 D1, D2, D5, ADR 0104 D2). The answer to record, the
        authenticator's grant and the operator's override, if any."""
        self.check_binding(state, event_type, answer, options)
        # ADR 0077 D3: identity first; the authenticator sees exactly what the caller sent.
        grant = self.authenticate(execution_id, state, events, event_type, answer, options, operation)
        self._require_flow(flow_id)
        if pinned:
            self.check_code(state)  # the shape is the pinned code's, which must be the one registered
        discard = self.scan_legacy(execution_id, flow_id, options, grant, event_type)
        # ADR 0077 D3: shape after identity. ADR 0077 D4: a resumeAs passes the TARGET flow.
        answer = self.shape_answer(self.flows[flow_id or ""], state, event_type, answer)
        self.check_answer(state, answer)
        return answer, grant, discard

    def check_resumable(self, state: State, event_type: str) -> None:
        """The ingress gate, in order: kernel namespace, parked, the parked gate's name
        (a timed park is also woken by TIMER_FIRED, ADR 0117 D5)."""
        if is_kernel_type(event_type):  # ADR 0104 D1: a caller cannot resume with a kernel type
            raise ResumeRefusedError("kernel-namespace", f"{event_type} is a kernel event type")
        parked_on = state.parked_on
        if parked_on is None:  # ADR 0104 D4, Consequences: an answer before the park is refused, not recorded
            raise ResumeRefusedError("not-suspended", f"execution is {state.status}, not parked")
        timed = "wakeAt" in (state.suspended_on or {})
        # ADR 0104 D1: the resume names the RECORDED gate. ADR 0117 D5: a timed park is also woken by the timer.
        if event_type != parked_on and not (event_type == TIMER_FIRED and timed):
            raise ResumeRefusedError("gate-mismatch", f"execution is parked on {parked_on!r:.80}, not {event_type!r:.80}")

    def check_binding(self, state: State, event_type: str, answer: JSON, options: ResumeOptions) -> None:
        """After the gate's name: the kernel's wake needs its grant on a strict runtime
        (ADR 0117 D5); any other answer must echo the parked viewDigest exactly (D1)."""
        condition = state.suspended_on or {}
        if event_type == TIMER_FIRED and "wakeAt" in condition:
            if self.security.strict and not options.system:  # ADR 0117 D5: only the timer, under strict
                raise ResumeRefusedError("timer-wake-not-system",
                                         "a TIMER_FIRED without the runtime's system grant (strict)")
            return  # ADR 0117 D1: the timer's wake is exempt from the digest
        if "viewDigest" in condition:  # ADR 0117 D1: the answer echoes the parked digest exactly
            echoed = answer.get("viewDigest") if isinstance(answer, dict) else None
            if type(echoed) is not str or echoed != condition["viewDigest"]:
                raise ResumeRefusedError("view-digest-mismatch",
                                         "the answer does not echo the viewDigest of the proposal this gate parked on")

    def authenticate(self, execution_id: str, state: State, events: list[Event], event_type: str, answer: JSON,
                     options: ResumeOptions, operation: dict[str, JSON] | None = None) -> Verdict | None:
        """Identity, before shape (ADR 0077 D3): the authenticator sees exactly what the
        caller sent, bound to the park it answers (ADR 0117 D2), to the operation (None: a
        plain resume) and to the incarnation (spec/signing.md section 10)."""
        authenticator = self.security.authenticator
        if authenticator is None or not authenticator.applies_to(event_type):
            return None
        parked_at = self.locate_park(execution_id, events)
        if parked_at is None:  # ADR 0117 Round 2: never bound to the tip
            raise ResumeRefusedError("park-not-located", "the EXECUTION_SUSPENDED this approval answers is no "
                                                         "longer in the log; an approval is never bound to the tip")
        # ADR 0117 D2: verified for the park it answers, by the caller's principal.
        context = {"executionId": execution_id, "parkedAtSequence": parked_at, "principal": options.principal,
                   "operation": operation or {"type": "resume"}, "incarnation": self.incarnation(execution_id)}
        verdict = authenticator.verify(options.event(event_type, answer), context)
        if verdict.status == "rejected":
            raise ResumeRefusedError("unauthenticated", f"the approval was rejected: {verdict.reason}")
        return verdict if verdict.status == "granted" else None

    def shape_answer(self, program: FlowProgram, state: State, event_type: str, answer: JSON) -> JSON:
        """What is recorded: the timer's wake as exactly {wakeAt} from the parked condition
        (ADR 0117 D5: no caller field reaches the flow), else the parsed answer (ADR 0077)."""
        condition = state.suspended_on or {}
        if event_type == TIMER_FIRED and "wakeAt" in condition:
            return {"wakeAt": condition["wakeAt"]}  # ADR 0117 D5: normalised, no caller field reaches the flow
        return self.parse_answer(program, event_type, answer)

    @staticmethod
    def parse_answer(program: FlowProgram, event_type: str, answer: JSON) -> JSON:
        """ADR 0077: a declared shape is parsed after identity and before the append;
        the parsed value is what is recorded. No entry: the payload as sent (D2)."""
        schema = program.resume_schema(event_type)  # ADR 0077 D1: the registered flow's map, no body run
        if schema is None:
            return answer  # ADR 0077 D2: no entry, no change
        parsed = parse(schema, answer)
        if isinstance(parsed, Invalid):
            raise ResumePayloadValidationError("invalid-payload", f"field {parsed.field}: {parsed.message}")
        return parsed.value  # ADR 0077 Consequences: the parsed value is what is recorded

    def check_answer(self, state: State, answer: JSON) -> None:
        """At an in-doubt park only a verdict for the parked step is an answer."""
        if state.parked_on == IN_DOUBT_GATE:  # ADR 0104 D1: only a verdict answers an in-doubt park
            step_id = (state.suspended_on or {}).get("stepId")
            if not isinstance(step_id, str) or not is_verdict_for(answer, step_id):
                raise ResumePayloadValidationError(
                    "not-a-verdict", f"an in-doubt park of step {step_id!r} takes "
                                     f"{{stepId: {step_id!r}, resolution: succeeded|failed|retry-fresh, output?}}")

    @staticmethod
    def record_grant(append: Append, grant: Verdict | None) -> None:
        if grant is not None:
            append(APPROVAL_GRANTED, grant.evidence())  # ADR 0117 D2: who approved, as evidence

    @staticmethod
    def record_discard(append: Append, discard: Discard | None, grant: Verdict | None) -> None:
        """ADR 0104 D2: the override is itself an approval, recorded in the reserved namespace."""
        if discard is not None and grant is not None:  # ADR 0104 D2: the override, as a reserved decision
            append("DECISION_RECORDED", {"decisionId": discard.decision_id, "choice": discard.count,
                                         "source": "operator", "rationale": {"approval": grant.evidence()}})

    def record_answer(self, append: Append, state: State, answer: JSON) -> None:
        if state.parked_on == IN_DOUBT_GATE:
            # ADR 0104 D1: the verdict answers ONE park, of one attempt of one step: a decision, not an entry.
            condition = state.suspended_on or {}
            decision_id = indoubt_decision_id(str(condition.get("stepId")), int(condition.get("attempt") or 1))
            append("DECISION_RECORDED", {"decisionId": decision_id, "choice": answer, "source": "operator"})
            append("EXECUTION_RESUMED", None)
        else:
            append("EXECUTION_RESUMED", answer)  # ADR 0104 D1: the payload IS that gate's answer

    def _plain_payload(self, payload: JSON, options: ResumeOptions | None = None) -> JSON:
        """The payload as a store hands it back, and the options it travels with checked alike:
        a transformState's value becomes migratedInput, a proof goes to the authenticator."""
        options = options or ResumeOptions()
        self.ingress([options.proof, options.principal, options.discard_legacy_answers, options.transform_state],
                     "the resume options", ResumePayloadValidationError, "invalid-payload", "payload-too-large")
        return self.ingress(payload, "the payload", ResumePayloadValidationError, "invalid-payload",
                            "payload-too-large")

    def ingress(self, value: JSON, what: str, error: type[KernelRefusal], not_json: str, too_large: str) -> JSON:
        """A caller's value as a store hands it back, or a typed refusal before anything is appended."""
        # ADR 0077 Context: once appended a payload is a permanent fold input, so it is bounded first.
        return bounded(lambda: to_plain_json(value, self.max_depth, self.max_bytes), what, error, not_json, too_large)


def is_kernel_type(event_type: object) -> bool:
    """Own names only, and only strings: a list or an object names no type (it is not hashable)."""
    return type(event_type) is str and event_type in kernel_event_types()


def bounded(check: Callable[[], JSON], what: str, error: type[KernelRefusal], not_json: str, too_large: str) -> JSON:
    """Ingress (ADR 0077 Context: "Once appended it is a permanent fold input"): the value `check`
    returns, or a typed refusal before anything is appended. `too_large` past the reference's
    bounds (reference/limits.py, a profile choice), `not_json` for what no store holds."""
    try:
        return check()
    except TooLarge as exc:
        raise error(too_large, f"{what}: {exc}; the reference takes at most {MAX_DEPTH} levels of nesting "
                               f"and {MAX_BYTES} bytes of JSON (spec/profiles.toml, ingress-limits)") from None
    except NotJson as exc:
        raise error(not_json, f"{what} is not storable: {exc}") from None
