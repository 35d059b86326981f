"""What a corpus run found: its cases, per category, the violations and the scripts that show
them, and the cases left out for a feature the implementation did not declare."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, TypeVar

from loomcheck.contract.needs import Undeclared
from loomcheck.contract.script import Operation
from loomcheck.properties.registry import Violation

T = TypeVar("T")


@dataclass
class CorpusResult:
    cases: int = 0
    per_category: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    operations: list[Operation] | None = None  # the script of the first violation, when it has one
    scripts: dict[str, list[Operation]] = field(default_factory=dict)  # per invariant, when a corpus judges several
    # Cases not run because they need a feature the implementation did not declare, by those features.
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, undeclared: Undeclared) -> None:
        key = ", ".join(sorted(undeclared.missing))
        self.skipped[key] = self.skipped.get(key, 0) + 1


def gated(result: CorpusResult, case: Callable[[], T]) -> T | None:
    """One case of a corpus, run only if every feature it reaches is declared (contract/needs.py)."""
    try:
        return case()
    except Undeclared as undeclared:
        result.skip(undeclared)
        return None
