"""The per-invariant index (spec/invariant-index.json): for each invariant of the catalogue, what
judges it (its predicate's registration, or the corpus, z3, CrossHair or vectors check), the
regression logs and committed counterexamples that show it, the seeded mutants it catches, and
the reference code tagged with its decision (`ADR NNNN Dn`). Paths are relative to the
repository root; the index describes a checkout (tests/ and results/ are not in the wheel).
docs/invariants.md links each entry; `python -m loomcheck.reports.regenerate` writes both."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from loomcheck.properties.checks import all_predicates
from loomcheck.reports.html import counterexample_file
from loomcheck.reports.model import Report
from loomcheck.spec.catalogue import Catalogue
from loomcheck.spec.regressions import load_regression

FORMAT = "loomcheck-invariant-index/1"
# Checks other than the engines that run the predicates (stateful, explorer, regressions): where
# each is judged, as (file, the text that starts it there; None: the whole file).
CHECK_CODE: dict[str, tuple[str, str | None]] = {
    "corpus:hostile-names": ("corpora/hostile_names.py", "def run_hostile_names("),
    "corpus:hostile-payloads": ("corpora/hostile_payloads.py", "def run_hostile_payloads("),
    "corpus:bound-answers": ("corpora/view_digests.py", "def run_bound_answers("),
    "corpus:tampering": ("corpora/tampered_approvals.py", "def run_tampering("),
    "corpus:legacy-logs": ("corpora/legacy_logs.py", "def run_legacy_logs("),
    "corpus:legacy-override": ("corpora/legacy_override.py", "run_legacy_override = "),
    "corpus:legacy-warnings": ("corpora/legacy_warnings.py", "run_legacy_warnings = "),
    "corpus:warm-scan": ("corpora/warm_scan.py", "run_warm_scan = "),
    "corpus:sigkill": ("corpora/crash_faults.py", "def run_sigkill("),
    "corpus:emit-witnesses": ("corpora/emit_witnesses.py", "def run_emit_witnesses("),
    "z3:emit-guard": ("symbolic/guard_proofs.py", "def emit_guard_proofs("),
    "z3:gate-induction": ("symbolic/gate_model.py", "def induction("),
    "crosshair:scanner-cut": ("symbolic/contracts.py", 'Check("scanner-cut"'),
    "crosshair:oracle": ("symbolic/contracts.py", 'Check("oracle"'),
    "crosshair:fold-snapshot": ("symbolic/contracts.py", 'Check("fold-snapshot"'),
    "crosshair:canonical": ("symbolic/contracts.py", 'Check("canonical"'),
    "vectors:view-digest": ("spec/vectors/view-digest.json", None),
    "vectors:signatures": ("spec/vectors/signatures.json", None),
    "vectors:resume-schemas": ("spec/vectors/resume-schemas.json", None),
}
ENGINES = frozenset({"stateful", "explorer", "regressions"})
MUTANTS = "tests/mutants"
FAILING = frozenset({"fail", "error"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Place(_Model):
    file: str
    line: int | None = None


class Judge(_Model):
    check: str  # "predicate", or a check kind of the catalogue (corpus:..., z3:..., crosshair:..., vectors:...)
    place: Place


class Counterexample(_Model):
    run: str   # the committed run's folder
    file: str


class Mutant(_Model):
    name: str
    file: str


class Entry(_Model):
    judges: list[Judge]
    regressions: list[str]
    counterexamples: list[Counterexample]
    mutants: list[Mutant]
    reference: list[Place]


class InvariantIndex(_Model):
    format: Literal["loomcheck-invariant-index/1"] = FORMAT
    invariants: dict[str, Entry]


def build_index(root: Path, catalogue: Catalogue, reports: Sequence[tuple[Path, Report]]) -> InvariantIndex:
    """The index of the checkout at `root`, with the counterexamples of the committed `reports`."""
    predicates = predicate_places(root)
    regressions = regression_logs(root)
    found = counterexamples(root, reports)
    caught = mutants_caught(root)
    tagged = decision_tags(root, decision_names(catalogue))
    entries = {}
    for inv in catalogue.invariants:
        judges = [Judge(check="predicate", place=predicates[inv.id])] if inv.id in predicates else []
        judges += [Judge(check=check, place=check_place(root, check)) for check in inv.checks if check not in ENGINES]
        entries[inv.id] = Entry(judges=judges, regressions=regressions.get(inv.id, []),
                                counterexamples=found.get(inv.id, []), mutants=caught.get(inv.id, []),
                                reference=tagged.get((inv.adr, inv.decision), []))
    return InvariantIndex(invariants=entries)


def dump_index(index: InvariantIndex) -> str:
    return index.model_dump_json() + "\n"


# -- what judges an invariant ----------------------------------------------------------
def predicate_places(root: Path) -> dict[str, Place]:
    """Each predicate's `@predicate(...)` line: the decorator naming its id, or its only one."""
    places = {}
    for invariant_id, fn in all_predicates().items():
        lines, start = inspect.getsourcelines(fn)
        decorators = [n for n, line in enumerate(lines) if line.lstrip().startswith("@predicate(")]
        naming = [n for n in decorators if f'"{invariant_id}"' in lines[n]] or decorators[:1]
        offset = naming[0] if naming else 0
        places[invariant_id] = Place(file=_relative(Path(inspect.getsourcefile(fn) or ""), root), line=start + offset)
    return places


def check_place(root: Path, check: str) -> Place:
    if check not in CHECK_CODE:
        raise ValueError(f"the index knows no code for the check {check!r}: add it to CHECK_CODE")
    file, start = CHECK_CODE[check]
    if start is None:
        return Place(file=file)
    lines = (root / file).read_text(encoding="utf-8").splitlines()
    line = next((n for n, text in enumerate(lines, start=1) if start in text), None)
    if line is None:
        raise ValueError(f"{file} no longer holds {start!r} (the check {check}): update CHECK_CODE")
    return Place(file=file, line=line)


# -- what shows it ---------------------------------------------------------------------
def regression_logs(root: Path) -> dict[str, list[str]]:
    named: dict[str, list[str]] = {}
    for path in sorted((root / "spec" / "regressions").glob("*.json")):
        for invariant_id in load_regression(path).invariants:
            named.setdefault(invariant_id, []).append(_relative(path, root))
    return named


def counterexamples(root: Path, reports: Sequence[tuple[Path, Report]]) -> dict[str, list[Counterexample]]:
    """Each failing record's counterexample, where it is now in the checkout."""
    found: dict[str, list[Counterexample]] = {}
    for path, report in reports:
        run = _relative(path.parent, root)
        for record in report.results:
            if record.status not in FAILING or not record.counterexample:
                continue
            file = counterexample_file(record.counterexample, path)
            if file is not None and file.is_file():
                found.setdefault(record.id, []).append(Counterexample(run=run, file=_relative(file, root)))
    return found


def mutants_caught(root: Path) -> dict[str, list[Mutant]]:
    """tests/mutants' CATCHES (tests/test_mutants.py holds the suite to it), read as text:
    the tests are no module of the package."""
    module = ast.parse((root / MUTANTS / "__init__.py").read_text(encoding="utf-8"))
    catches = next(ast.literal_eval(node.value) for node in module.body
                   if isinstance(node, ast.AnnAssign | ast.Assign) and "CATCHES" in _targets(node))
    caught: dict[str, list[Mutant]] = {}
    for name, invariant_ids in catches.items():
        file = f"{MUTANTS}/{name}.py"
        if not (root / file).is_file():
            raise ValueError(f"CATCHES names the mutant {name}, but {file} does not exist")
        for invariant_id in invariant_ids:
            caught.setdefault(invariant_id, []).append(Mutant(name=name, file=file))
    return {key: sorted(value, key=lambda m: m.name) for key, value in caught.items()}


def _targets(node: ast.AnnAssign | ast.Assign) -> set[str]:
    targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
    return {t.id for t in targets if isinstance(t, ast.Name)}


# -- the reference code that implements the decision ----------------------------------
ADR_TAG = re.compile(r"ADR (\d{4})")
SEPARATOR = re.compile(r"(?:,\s*|\s+and\s+|\s*/\s*|\s+)(?:amendment\s+)?")


def decision_names(catalogue: Catalogue) -> dict[str, list[str]]:
    """Each ADR's decisions as the catalogue names them, longest first (so "D10" is not read as "D1")."""
    names: dict[str, set[str]] = {}
    for inv in catalogue.invariants:
        names.setdefault(inv.adr, set()).add(inv.decision)
    return {adr: sorted(found, key=lambda name: (-len(name), name)) for adr, found in names.items()}


def decision_tags(root: Path, decisions: dict[str, list[str]]) -> dict[tuple[str, str], list[Place]]:
    """Every line of reference/ that cites a decision (`ADR 0104 D1`, `ADR 0117 D2, D3`,
    `ADR 0104 D2 and amendment R1a`), by (ADR, decision) as the catalogue names them."""
    tagged: dict[tuple[str, str], list[Place]] = {}
    for path in sorted((root / "reference").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for adr, decision in tags_in(line, decisions):
                places = tagged.setdefault((adr, decision), [])
                place = Place(file=_relative(path, root), line=number)
                if place not in places:
                    places.append(place)
    return tagged


def tags_in(line: str, decisions: dict[str, list[str]]) -> Iterable[tuple[str, str]]:
    """The (ADR, decision) pairs a line cites; `decisions` lists each ADR's names, longest first."""
    for match in ADR_TAG.finditer(line):
        adr, rest = match.group(1), line[match.end():]
        while (separator := SEPARATOR.match(rest)) is not None:
            after = rest[separator.end():]
            name = next((n for n in decisions.get(adr, ()) if after.startswith(n)
                         and not re.match(r"[\w-]", after[len(n):len(n) + 1])), None)
            if name is None:
                break
            yield adr, name
            rest = after[len(name):]


def _relative(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()
