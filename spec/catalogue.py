"""The invariant catalogue: one entry per invariant, with its ADR and decision,
the EVENT_SCHEMA version it applies from, one plain sentence, the optional
driver features it needs, and the checks that enforce it.

Entries live in `spec/invariants/*.toml`; `load_catalogue()` validates every
file with pydantic and names the file and field of a bad entry.
`catalogue.json` beside this module is the JSON export, for other languages.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from loomcheck.spec.errors import SpecError, describe_validation_error
from loomcheck.spec.files import SPEC_ROOT, read_toml, spec_label
from loomcheck.spec.vocabulary import VERSION_PATTERN

ADRS = ("0056", "0057", "0077", "0104", "0117")

# Optional driver features; an implementation that does not declare one gets
# "not-applicable" for every invariant that requires it, never "pass".
FEATURES = ("fold", "load-log", "recover", "resume-as", "restart", "effect-ledger", "input-validation",
            "resume-schemas", "human-steps", "in-doubt", "parallel", "emit-guard", "view-digest", "timers",
            "security", "signing", "operation-binding", "code-versions", "state-migration", "legacy-scan", "retention", "durable",
            "kill-points")

# How an invariant is exercised. "stateful": the Hypothesis state machine
# evaluates its predicate after every operation; "explorer": the bounded exhaustive
# explorer (explore/) evaluates it on every history of its scenarios up to a depth;
# "regressions": every committed
# regression log that names it is replayed; "corpus:<name>": a fixed corpus run
# through the driver; "vectors:<name>": published test vectors in spec/vectors/
# that loomcheck's own tests run (for the parts of a kernel no driver call reaches).
CHECK_KINDS = ("stateful", "explorer", "regressions", "corpus:hostile-names", "corpus:hostile-payloads",
               "corpus:tampering", "corpus:bound-answers",
               "corpus:legacy-logs", "corpus:legacy-override", "corpus:legacy-warnings", "corpus:warm-scan", "corpus:sigkill",
               "corpus:emit-witnesses",
               # Symbolic checks of the spec and the reference's pure functions, run by loomcheck's own
               # tests (CI): z3 proofs (symbolic/guard_proofs.py, symbolic/gate_model.py) and CrossHair searches.
               "z3:emit-guard", "z3:gate-induction",
               "crosshair:scanner-cut", "crosshair:oracle", "crosshair:fold-snapshot", "crosshair:canonical",
               "vectors:view-digest", "vectors:signatures", "vectors:resume-schemas", "vectors:stray-scan")

InvariantKind = Literal["invariant", "differential", "documented-hazard", "documented-residual"]


class Invariant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9]*(\.[a-z0-9][a-z0-9-]*)+$")
    adr: Literal[ADRS]
    decision: str = Field(min_length=1)
    since: str = Field(pattern=VERSION_PATTERN)
    kind: InvariantKind
    title: str = Field(min_length=1, max_length=60)
    statement: str = Field(min_length=10)
    quote: str | None = None
    requires: tuple[Literal[FEATURES], ...] = ()
    checks: tuple[Literal[CHECK_KINDS], ...] = Field(min_length=1)
    notes: str | None = Field(default=None, description="edge cases and what the statement deliberately leaves out")
    profile: str | None = Field(default=None, description="the choice of spec/profiles.toml the check rests on: its "
                                                          "verdict is profile agreement, not ADR conformance")

    @field_validator("profile")
    @classmethod
    def _known_choice(cls, choice: str | None) -> str | None:
        from loomcheck.spec.profiles import profile

        if choice is not None and choice not in profile().ids:
            raise ValueError(f"{choice!r} is no choice of spec/profiles.toml ({', '.join(sorted(profile().ids))})")
        return choice

    @field_validator("statement")
    @classmethod
    def _one_sentence(cls, statement: str) -> str:
        if not statement.rstrip().endswith("."):
            raise ValueError("statement must be one plain sentence ending with a full stop")
        return statement


class CatalogueFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    invariant: list[Invariant] = Field(min_length=1)


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    invariants: list[Invariant]

    def get(self, invariant_id: str) -> Invariant:
        for inv in self.invariants:
            if inv.id == invariant_id:
                return inv
        raise KeyError(invariant_id)

    @property
    def ids(self) -> list[str]:
        return [inv.id for inv in self.invariants]


def load_catalogue_from(directory: Traversable | Path) -> Catalogue:
    """Load and validate every `*.toml` in a directory of invariant files."""
    invariants: list[Invariant] = []
    seen: dict[str, str] = {}
    paths = sorted((p for p in directory.iterdir() if p.name.endswith(".toml")), key=lambda p: p.name)
    if not paths:
        raise SpecError(f"{spec_label(directory)}: no invariant files (*.toml)")
    for path in paths:
        label = spec_label(path)
        raw = read_toml(path, label)
        try:
            parsed = CatalogueFile.model_validate(raw)
        except ValidationError as exc:
            raise describe_validation_error(label, exc, "invariant", raw) from None
        for inv in parsed.invariant:
            if inv.id in seen:
                raise SpecError(f"{label}: invariant id '{inv.id}' is already defined in {seen[inv.id]}")
            seen[inv.id] = label
            invariants.append(inv)
    return Catalogue(invariants=invariants)


@cache
def load_catalogue() -> Catalogue:
    return load_catalogue_from(SPEC_ROOT / "invariants")


def export_json(catalogue: Catalogue) -> str:
    """The JSON export other languages read (committed as spec/catalogue.json)."""
    return json.dumps(catalogue.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
