"""What a runtime keeps for the stray scan (ADR 0104 D2, amendment R1a): the
memory of warnings given, the cache of clean scanners, and the operator's
override. The scan itself is reference/scanner.py; the order of the checks is
the runtime's (spec/legacy-logs.md section 4)."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from loomcheck.reference.approvals import signed_discard
from loomcheck.reference.context import discard_decision_id
from loomcheck.reference.errors import ResumeRefusedError
from loomcheck.reference.scanner import Kinds, StrayScanner, Verdict
from loomcheck.spec.names import WARN_MEMORY
from loomcheck.spec.programs import FlowProgram, StepOp

SCAN_CACHE = 1024   # R1a: "a bounded process-local map"

Warn = Callable[[dict[str, Any]], None]


def kinds_of(program: FlowProgram | None) -> Kinds:
    """Step kinds from the definition; a step it does not hold is unresolvable (None)."""
    kinds = {op.id: op.kind for op in program.calls() if isinstance(op, StepOp)} if program else {}
    return kinds.get


class WarnMemory:
    """ADR 0104 D2: warn once per execution and verdict per runtime, remembering at
    most WARN_MEMORY pairs, oldest forgotten first, so a long-lived runtime neither
    grows without bound nor warns on every resume."""

    def __init__(self, limit: int = WARN_MEMORY) -> None:
        self.limit = limit
        self.said: OrderedDict[tuple[str, str], None] = OrderedDict()

    def first_time(self, execution_id: str, verdict: str) -> bool:
        key = (execution_id, verdict)
        if key in self.said:
            return False
        self.said[key] = None
        while len(self.said) > self.limit:
            self.said.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self.said)


@dataclass
class CachedScan:
    scanner: StrayScanner
    seq: int                 # the last seq it consumed
    definition: object       # the definition object its step kinds came from (compared by identity)


class ScanCache:
    """R1a: per execution, the scanner after the last clean scan; bounded, oldest dropped first."""

    def __init__(self, limit: int = SCAN_CACHE) -> None:
        self.limit = limit
        self.entries: OrderedDict[str, CachedScan] = OrderedDict()

    def take(self, execution_id: str) -> CachedScan | None:
        """Remove and return the entry: it is put back only after a clean scan."""
        return self.entries.pop(execution_id, None)

    def keep(self, execution_id: str, entry: CachedScan) -> None:
        self.entries[execution_id] = entry
        while len(self.entries) > self.limit:
            self.entries.popitem(last=False)

    def drop(self, execution_id: str) -> None:
        self.entries.pop(execution_id, None)


@dataclass(frozen=True)
class Discard:
    """discardLegacyAnswers: {stepId, count}."""

    step_id: str
    count: int

    @property
    def decision_id(self) -> str:
        return discard_decision_id(self.step_id)


def parse_discard(value: Any) -> Discard | None:
    """None when there is no override; refused invalid-discard when it is malformed."""
    try:
        override = signed_discard(value)  # the one reading of the override's shape (spec/signing.md)
    except (TypeError, ValueError):
        raise ResumeRefusedError("invalid-discard", "discardLegacyAnswers must be exactly {stepId: a non-empty "
                                                    "string, count: an integer >= 0}") from None
    return None if override is False else Discard(override["stepId"], override["count"])


def warning_of(execution_id: str, verdict: Verdict, kind: str) -> dict[str, Any]:
    """What on_warn is handed: the execution, the verdict and its entries."""
    return {"executionId": execution_id, "verdict": kind,
            "entries": [{"index": c.index, "seq": c.seq, "why": c.why} for c in verdict.classified
                        if c.verdict == kind]}
