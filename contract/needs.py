"""Which driver features a case exercises, derived from what it does: its
operations, its flow programs, and the calls outside the script it makes.

Every regression log, corpus case and explorer scenario runs only when the
implementation declares all of these (docs/driver.md: "an undeclared method may
raise NotImplementedError; it is not called"), so one implementation's missing
feature never turns into a finding against the features it does declare."""

from __future__ import annotations

from typing import Any, Iterable

from loomcheck.contract.script import (
    AdvanceClock,
    Configure,
    Define,
    Kill,
    Load,
    Operation,
    Recover,
    RecoverAbandoned,
    Restart,
    Resume,
    ResumeAs,
)
from loomcheck.spec.programs import program_features
from loomcheck.spec.vocabulary import vocabulary



class Undeclared(Exception):
    """A case reached an operation that needs a feature the implementation did not declare.
    Not a finding about the implementation: the case does not apply to it, and is skipped."""

    def __init__(self, what: str, missing: set[str]) -> None:
        super().__init__(f"{what} needs driver feature(s) {', '.join(sorted(missing))}, not declared")
        self.what = what
        self.missing = frozenset(missing)


def program_needs(program: dict[str, Any]) -> set[str]:
    """A program's features, and `emit-guard` for a flow-level emit of a kernel type the
    guard admits (meters, quotas, audit facts, decisions: ADR 0104 D1's allow-list).
    Emitting any other kernel type is refused by every kernel, so it needs nothing."""
    needs = program_features(program)
    allowed = set(vocabulary().emit_guard.allowed)
    body = program.get("body") if isinstance(program, dict) else None
    for op in body if isinstance(body, list) else []:
        if isinstance(op, dict) and op.get("op") == "emit" and op.get("type") in allowed:
            needs.add("emit-guard")
    return needs


def options_need(options: dict[str, Any] | None) -> set[str]:
    """Resume options: `transformState` is ADR 0056's (state-migration); a proof, a principal
    and the operator's override are ADR 0117's security options, and the override is the
    legacy scan's (ADR 0104 D2)."""
    options = options or {}
    needs = {"security"} if set(options) - {"transformState"} else set()
    if "transformState" in options:
        needs.add("state-migration")
    if "discardLegacyAnswers" in options:
        needs.add("legacy-scan")
    return needs


def operations_need(operations: Iterable[Operation]) -> set[str]:
    """The driver features a script uses: its operations and its flow programs. A flow id
    defined again with another program deploys a new code version (K11: `code-versions`)."""
    needs: set[str] = set()
    deployed: dict[str, Any] = {}
    for op in operations:
        if isinstance(op, Kill):
            needs |= {"durable", "kill-points"} if op.after_appends else {"durable"}
            op = op.during  # type: ignore[assignment]
            if op is None:
                continue
        if isinstance(op, Load):
            needs.add("load-log")
        if isinstance(op, (Recover, RecoverAbandoned)):
            needs.add("recover")
        if isinstance(op, ResumeAs):
            needs.add("resume-as")
        if isinstance(op, Restart):
            needs.add("restart")
        if isinstance(op, Define):
            needs |= program_needs(op.program)
            if op.flow in deployed and deployed[op.flow] != op.program:
                needs.add("code-versions")
            deployed[op.flow] = op.program
        if isinstance(op, (Resume, ResumeAs)):
            needs |= options_need(op.options)
        if isinstance(op, Configure):
            needs.add("security")
        if isinstance(op, AdvanceClock):
            needs.add("timers")
    return needs
