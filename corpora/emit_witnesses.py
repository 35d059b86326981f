"""The emit-witnesses corpus (ADR 0104 D1, the emit guard's validated types): the
boundary witnesses z3 derives from the spec (symbolic/guards.py) emitted through the
driver, from flow code and from inside an effect, each judged against the spec
encoding's verdict. What can and cannot be sent: docs/corpora.md#emit-witnesses."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from loomcheck.contract.script import Define, Start
from loomcheck.contract.boundary import ImplementationFailed
from loomcheck.contract.session import Session
from loomcheck.contract.jsonvalues import show
from loomcheck.corpora.result import CorpusResult
from loomcheck.properties.registry import Violation

if TYPE_CHECKING:  # z3 is imported when the corpus runs, not by every `loomcheck` start-up
    from loomcheck.symbolic.guards import Witness

CHECK = "corpus:emit-witnesses"
# Each validated type is its own rule of ADR 0104 D1, so its own invariant.
IDS = {"RESOURCE_METERED": "emit.meters-validated", "QUOTA_EXCEEDED": "emit.quota-reason-validated"}
PATHS = ("flow", "effect")


def sendable_witnesses() -> list[Witness]:
    from loomcheck.symbolic.guards import all_witnesses

    return [w for w in all_witnesses() if w.expressible]


def run_emit_witnesses(session: Session, invariant_ids: tuple[str, ...] = tuple(IDS.values())) -> CorpusResult:
    result = CorpusResult()
    if "emit-guard" not in session.features:
        return result
    for witness in sendable_witnesses():
        invariant = IDS[witness.event]
        if invariant not in invariant_ids:
            continue
        for path in PATHS:
            category = f"{'meter' if witness.event == 'RESOURCE_METERED' else 'quota'}/{path}"
            result.cases += 1
            result.per_category[category] = result.per_category.get(category, 0) + 1
            try:
                found = list(_case(session, witness, path, invariant))
            except ImplementationFailed as failed:  # dying on a witness is the bug itself
                found = [Violation(invariant, f"{_where(witness, path)}: the implementation failed: {failed}")]
            if found and invariant not in result.scripts:
                result.scripts[invariant] = session.script()  # the case alone: each starts from a reset
                result.operations = result.operations or result.scripts[invariant]
            result.violations.extend(found)
    return result


def program_for(witness: Witness, path: str) -> dict[str, Any]:
    emit = {"type": witness.event, "payload": witness.payload}
    first = {"op": "emit", **emit} if path == "flow" else {"op": "step", "id": "meter", "emits": [emit]}
    return {"body": [first, {"op": "complete"}]}


def _where(witness: Witness, path: str) -> str:
    return f"{witness.event} {witness.label} ({'flow code' if path == 'flow' else 'from an effect'})"


def _case(session: Session, witness: Witness, path: str, invariant: str) -> Iterator[Violation]:
    session.reset()
    where = _where(witness, path)
    defined = session.apply(Define("f", program_for(witness, path)))
    if not defined.outcome.ok:
        yield Violation(invariant, f"{where}: a flow emitting it could not be defined ({defined.outcome.reason}: "
                            f"{defined.outcome.message[:80]}), though the program language carries it.")
        return
    started = session.apply(Start("x", "f", None))
    if not started.outcome.ok:
        yield Violation(invariant, f"{where}: the start was refused ({started.outcome.reason}); an emit the guard refuses "
                            f"fails the run (EXECUTION_FAILED), it does not refuse the caller.")
        return
    appended = [e for e in started.log_after if e.get("type") == witness.event]
    failures = [e for e in started.log_after if e.get("type") == "EXECUTION_FAILED"]
    error = (failures[-1].get("payload") or {}).get("error") if failures else None
    reason = error.get("reason") if isinstance(error, dict) else None
    status = (started.state_after or {}).get("status")
    if witness.accepted:
        if not appended or status != "completed":
            refused = f"refused it ({reason})" if reason else f"left the execution {status} without appending it"
            yield Violation(invariant, f"{where}: the spec accepts {show(witness.payload, 40)} but the kernel {refused} "
                                f"(ADR 0104 D1).")
    elif appended:
        yield Violation(invariant, f"#{appended[0]['seq']} {witness.event} {show(witness.payload, 40)} reached the log "
                            f"({'flow code' if path == 'flow' else 'from an effect'}), but the spec refuses it: "
                            f"{witness.label} (ADR 0104 D1).", (appended[0]["seq"],))
    elif status != "failed" or reason not in witness.reasons:
        yield Violation(invariant, f"{where}: refused, but the run is {status} with reason {reason!r}; the spec fails it "
                            f"with {' or '.join(sorted(witness.reasons))} (spec/refusals.toml).")
