"""The spec as data: the invariant catalogue, its exports, the committed
regression corpus, the refusal reasons and the EVENT_SCHEMA history. The error
messages a broken spec file produces: test_spec_errors.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loomcheck.properties.checks import all_predicates
from loomcheck.reference import errors as reference_errors
from loomcheck.spec.catalogue import ADRS, Catalogue, load_catalogue
from loomcheck.spec.files import SPEC_ROOT
from loomcheck.spec.regressions import committed_regressions
from loomcheck.reports.schemas import generated
from loomcheck.spec.vocabulary import refusals, version_key, vocabulary

REGENERATE = "run `python -m loomcheck.reports.schemas` and commit the result"
EXECUTED_CHECKS = {"stateful", "regressions"}


# --------------------------------------------------------------------------- the catalogue


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_catalogue()


def test_catalogue_loads_with_unique_ids(catalogue: Catalogue) -> None:
    assert catalogue.invariants
    assert len(catalogue.ids) == len(set(catalogue.ids))


def test_invariants_cite_known_adrs_and_versions(catalogue: Catalogue) -> None:
    versions = {entry.version for entry in vocabulary().history}
    for inv in catalogue.invariants:
        assert inv.adr in ADRS, inv.id
        assert inv.since in versions, f"{inv.id}: since {inv.since} is not an EVENT_SCHEMA version in events.toml"


def test_every_executed_invariant_has_a_predicate(catalogue: Catalogue) -> None:
    predicates = all_predicates()
    missing = [inv.id for inv in catalogue.invariants if EXECUTED_CHECKS & set(inv.checks) and inv.id not in predicates]
    assert missing == [], f"invariants checked statefully or by regressions without a predicate: {missing}"


def test_every_predicate_is_in_the_catalogue(catalogue: Catalogue) -> None:
    unknown = sorted(set(all_predicates()) - set(catalogue.ids))
    assert unknown == [], f"predicates for invariants the catalogue does not define: {unknown}"


def test_every_regressions_invariant_is_named_by_a_committed_log(catalogue: Catalogue) -> None:
    named = {name for _, log in committed_regressions() for name in log.invariants}
    orphans = [inv.id for inv in catalogue.invariants if "regressions" in inv.checks and inv.id not in named]
    assert orphans == [], f"invariants with the 'regressions' check that no committed log names: {orphans}"


def test_committed_logs_name_only_catalogue_invariants(catalogue: Catalogue) -> None:
    for label, log in committed_regressions():
        unknown = sorted(set(log.invariants) - set(catalogue.ids))
        assert unknown == [], f"{label} names invariants not in the catalogue: {unknown}"


# --------------------------------------------------------------------------- the committed corpus


def regression_files() -> list[Any]:
    return sorted((p for p in (SPEC_ROOT / "regressions").iterdir() if p.name.endswith(".json")), key=lambda p: p.name)


def test_there_are_committed_regression_logs() -> None:
    assert len(regression_files()) == len(committed_regressions()) >= 3


@pytest.mark.parametrize("path", regression_files(), ids=lambda p: p.name)
def test_committed_log_validates_against_published_schema(path: Any) -> None:
    schema = json.loads((SPEC_ROOT / "schemas" / "regression-log.schema.json").read_text(encoding="utf-8"))
    raw = json.loads(path.read_text(encoding="utf-8"))
    problems = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in Draft202012Validator(schema).iter_errors(raw)]
    assert problems == []


def test_every_committed_log_has_an_expectation() -> None:
    for label, log in committed_regressions():
        assert log.expect is not None, f"{label} has no expect"
        assert len(log.expect.outcomes) == len(log.operations), label
        assert log.name == Path(label).stem, label


# --------------------------------------------------------------------------- generated exports


def committed_exports() -> list[str]:
    """Every file the generator owns: catalogue.json, everything under spec/schemas/, the tampering vectors."""
    schemas = SPEC_ROOT / "schemas"
    return ["catalogue.json"] + sorted(f"schemas/{p.name}" for p in schemas.iterdir() if p.is_file()) \
        + sorted(f"schemas/protocol/{p.name}" for p in (schemas / "protocol").iterdir()) \
        + ["vectors/tampered-approvals.json"]


@pytest.mark.parametrize("name", committed_exports())
def test_committed_export_is_up_to_date(name: str) -> None:
    """A stale export fails the build."""
    expected = generated()
    assert name in expected, f"spec/{name} is not produced by the generator: delete it, or {REGENERATE}"
    committed = (SPEC_ROOT / name).read_text(encoding="utf-8")
    assert committed == expected[name], f"spec/{name} is stale: {REGENERATE}"


def test_every_generated_file_is_committed() -> None:
    missing = sorted(set(generated()) - set(committed_exports()))
    assert missing == [], f"generated but not committed: {missing}; {REGENERATE}"


@pytest.mark.parametrize("name", [n for n in committed_exports() if n.startswith("schemas/")])
def test_published_schema_is_valid_json_schema(name: str) -> None:
    schema = json.loads((SPEC_ROOT / name).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("/" + name.removeprefix("schemas/"))


TITLES = {
    "schemas/flow-program.schema.json": "loomcheck flow program (loomcheck-flow/1)",
    "schemas/regression-log.schema.json": "loomcheck regression log (loomcheck-regression/1)",
    "schemas/report.schema.json": "loomcheck report (loomcheck-report/1)",
    "schemas/catalogue.schema.json": "loomcheck invariant catalogue",
}


def test_published_schemas_carry_their_titles() -> None:
    """reports/schemas.py passes each schema a human title; the published files must carry it."""
    files = generated()
    titles = {name: json.loads(files[name])["title"] for name in TITLES}
    assert titles == TITLES


def test_catalogue_export_validates_against_its_schema(catalogue: Catalogue) -> None:
    schema = json.loads((SPEC_ROOT / "schemas" / "catalogue.schema.json").read_text(encoding="utf-8"))
    exported = json.loads((SPEC_ROOT / "catalogue.json").read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(exported)
    assert [inv["id"] for inv in exported["invariants"]] == catalogue.ids


# --------------------------------------------------------------------------- refusals and the event vocabulary


def test_refusal_reasons_are_unique() -> None:
    reasons = [r.reason for r in refusals().refusal]
    assert len(reasons) == len(set(reasons))


def test_refusal_errors_exist_in_the_reference() -> None:
    for refusal in refusals().refusal:
        cls = getattr(reference_errors, refusal.error, None)
        assert isinstance(cls, type), f"{refusal.reason}: no class {refusal.error} in loomcheck.reference.errors"
        assert issubclass(cls, reference_errors.KernelRefusal), refusal.error
        assert cls.error == refusal.error


def test_refusals_cite_catalogue_adrs() -> None:
    """A refusal cites one of the catalogue's ADRs, or none and says it is the kernel model's own."""
    for refusal in refusals().refusal:
        assert refusal.adr in ADRS or (refusal.adr is None and refusal.decision == "kernel model"), refusal.reason


def test_event_types_are_unique() -> None:
    types = [event.type for event in vocabulary().event]
    assert len(types) == len(set(types))


def test_schema_history_is_ordered_and_ends_at_current() -> None:
    history = [entry.version for entry in vocabulary().history]
    keys = [version_key(v) for v in history]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert history[-1] == vocabulary().current


def test_every_catalogue_adr_is_in_the_history() -> None:
    """ADR 0117 changes no schema; every other ADR of the catalogue bumps or pins one."""
    in_history = {entry.adr for entry in vocabulary().history}
    for adr in ADRS:
        if adr != "0117":
            assert adr in in_history, f"ADR {adr} has no EVENT_SCHEMA history entry"


def test_event_types_date_from_known_versions() -> None:
    versions = {entry.version for entry in vocabulary().history}
    for event in vocabulary().event:
        assert event.since in versions, event.type


ADR_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "adr"


@pytest.mark.skipif(not ADR_DIR.is_dir(), reason=f"the decision records are not beside the checkout ({ADR_DIR})")
def test_every_quote_is_verbatim_from_its_adr() -> None:
    """A quote is evidence only if the ADR says exactly that (whitespace folded)."""
    texts = {path.name[:4]: " ".join(path.read_text(encoding="utf-8").split()) for path in ADR_DIR.glob("*.md")}
    for invariant in load_catalogue().invariants:
        if invariant.quote:
            assert " ".join(invariant.quote.split()) in texts[invariant.adr], (invariant.id, invariant.quote)


# Check kinds loomcheck's own tests run (not `loomcheck run`): each names the test file
# that runs it, so a catalogue entry never cites a check that does not exist.
OFFLINE_CHECKS = {
    "vectors:view-digest": "test_canonical.py",
    "vectors:signatures": "test_approvals.py",
    "vectors:resume-schemas": "test_kit_resume_schemas.py",
    "z3:emit-guard": "test_symbolic_guards.py",
    "z3:gate-induction": "test_symbolic_gates.py",
    "crosshair:scanner-cut": "test_symbolic_contracts.py",
    "crosshair:oracle": "test_symbolic_contracts.py",
    "crosshair:fold-snapshot": "test_symbolic_contracts.py",
    "crosshair:canonical": "test_symbolic_contracts.py",
}


def test_every_check_an_invariant_names_is_run_somewhere() -> None:
    from loomcheck.run.corpus_phase import CORPORA

    run_by_the_runner = {"stateful", "explorer", "regressions", "corpus:sigkill"} | {kind for kind, _, _ in CORPORA}
    tests = Path(__file__).parent
    for invariant in load_catalogue().invariants:
        for check in invariant.checks:
            if check in run_by_the_runner:
                continue
            assert check in OFFLINE_CHECKS, f"{invariant.id} names {check}, which neither the runner nor a test runs"
            assert (tests / OFFLINE_CHECKS[check]).is_file(), (check, OFFLINE_CHECKS[check])


def test_the_symbolic_checks_and_the_catalogue_name_each_other() -> None:
    """A CrossHair check backs exactly the entries that cite it (symbolic/contracts.py CHECKS)."""
    from loomcheck.symbolic.contracts import CHECKS

    catalogue = load_catalogue()
    for check in CHECKS:
        citing = {inv.id for inv in catalogue.invariants if f"crosshair:{check.name}" in inv.checks}
        assert citing == set(check.backs), (check.name, citing, check.backs)
    cited = {c for inv in catalogue.invariants for c in inv.checks if c.startswith("crosshair:")}
    assert cited == {f"crosshair:{check.name}" for check in CHECKS}
