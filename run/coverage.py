"""A run's coverage: which of the items it should reach (run/coverage_items.py) each layer
reached (run/reached.py), and the verdict on it: an applicable item no layer reached is a gap,
a failure of the suite. Coverage is not judgement; the predicates judge (properties/)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from loomcheck.contract.session import Step, Trace
from loomcheck.reports.model import Finding
from loomcheck.run.coverage_items import Item, universe
from loomcheck.run.reached import reached

JSON = Any
LAYERS = ("stateful", "explorer", "symbolic", "regressions", "corpus")
GAP_REASON = "coverage-gap"  # Finding.reason of an applicable item no layer reached (a suite-error)


@dataclass(frozen=True)
class Row:
    """One item in a run's coverage (reports/model.py CoverageRow is its JSON form)."""

    kind: str
    name: str
    adr: str | None
    decision: str
    reachedBy: list[str]
    applicable: bool
    why: str | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def gap(self) -> bool:
        return self.applicable and not self.reachedBy

    def to_json(self) -> dict[str, JSON]:
        return {"kind": self.kind, "name": self.name, "adr": self.adr, "decision": self.decision,
                "reachedBy": list(self.reachedBy), "applicable": self.applicable, "why": self.why}


@dataclass
class Coverage:
    """The layers that reached each item, credited step by step (or by a layer without steps)."""

    items: tuple[Item, ...] = field(default_factory=universe)
    by: dict[str, set[str]] = field(default_factory=dict)  # item key -> layers that reached it
    errors: list[str] = field(default_factory=list)  # the classifier's own failures: a suite-error each

    def __post_init__(self) -> None:
        self._item_keys = frozenset(item.key for item in self.items)  # credit checks every key against it

    def observe(self, step: Step, trace: Trace, layer: str) -> set[str]:
        """Never raises for what an implementation wrote: a classifier failure on a strange log
        is kept in `errors` (the suite's fault, to report), and the run goes on."""
        try:
            keys = reached(step, trace)
        except Exception as exc:  # noqa: BLE001 - coverage must not stop a run that checks a kernel
            self.errors.append(f"coverage of step {step.index} ({step.op.op}): {type(exc).__name__}: {exc}")
            return set()
        for key in keys:
            self.credit(key, layer)
        return keys

    def observer(self, layer: str) -> "Callable[[Step, Trace], None]":
        """A Session observer (Session.observers) crediting `layer` with every step recorded."""
        def observe(step: Step, trace: Trace) -> None:
            self.observe(step, trace, layer)
        return observe

    def credit(self, key: str, layer: str) -> None:
        """For layers that produce no Steps (symbolic witnesses, a corpus's unscripted calls)."""
        if layer not in LAYERS:
            raise ValueError(f"unknown layer {layer!r}; one of {', '.join(LAYERS)}")
        if key not in self._item_keys:
            raise KeyError(f"{key!r} is no coverage item (kind:name, e.g. refusal:gate-mismatch)")
        self.by.setdefault(key, set()).add(layer)

    def merge(self, other: "Coverage | Mapping[str, Iterable[str]]") -> None:
        """Fold in another collector's credits (another process, a saved run)."""
        credits = other.by if isinstance(other, Coverage) else other
        for key, layers in credits.items():
            for layer in layers:
                self.credit(key, layer)

    def summary(self, features: Iterable[str]) -> list[Row]:
        have = frozenset(features)
        rows = []
        for item in self.items:
            layers = sorted(self.by.get(item.key, ()), key=LAYERS.index)
            missing = [f for f in item.requires if f not in have]
            if item.one_of and not have & set(item.one_of):
                missing.append(" or ".join(item.one_of))
            if item.unreachable is not None and not layers:
                rows.append(Row(item.kind, item.name, item.adr, item.decision, layers, False,
                                f"not reachable through the driver: {item.unreachable}"))
                continue
            if item.optional is not None and not layers:
                rows.append(Row(item.kind, item.name, item.adr, item.decision, layers, False,
                                f"not required: {item.optional}"))
                continue
            if missing:
                why: str | None = f"needs {', '.join(missing)}"
            elif not layers:
                why = "no layer reached it" + (f" ({item.note})" if item.note else "")
            else:
                why = None
            rows.append(Row(item.kind, item.name, item.adr, item.decision, layers, not missing, why))
        return rows

    def gaps(self, features: Iterable[str]) -> list[Row]:
        """Applicable items no layer reached: each a failure of the suite, which did not exercise it."""
        return [row for row in self.summary(features) if row.gap]


def gap_message(row: Row) -> str:
    where = f"ADR {row.adr} {row.decision}" if row.adr else row.decision
    return (f"coverage gap: {row.kind} {row.name!r} ({where}) is applicable to this implementation, "
            f"but no layer of the run reached it; the suite does not exercise it.")


def gap_findings(rows: list[Row]) -> list[Finding]:
    """The gaps as report Findings (suite-error, reason coverage-gap): the report's boundary."""
    return [Finding(kind="suite-error", reason=GAP_REASON, message=gap_message(row)) for row in rows if row.gap]
