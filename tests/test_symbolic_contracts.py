"""The CrossHair checks (symbolic/contracts.py): on the real functions each finds no
difference within its budget, and each finds its seeded mutants (tests/symbolic_mutants.py).
A difference CrossHair reports is replayed here on plain Python values, so a
counterexample that exists only in CrossHair's symbolic model cannot pass as a find.

Budget: symbolic.contracts.CROSSHAIR_MAX_ITERATIONS paths and CROSSHAIR_BUDGET_SECONDS
of CPU per search, each search in its own process."""

from __future__ import annotations

import importlib
import math
from typing import Any

import pytest

from loomcheck.symbolic.contracts import CHECKS, Check, CheckResult, run_check

BY_NAME = {check.name: check for check in CHECKS}
MUTANTS_MODULE = "loomcheck.tests.symbolic_mutants"

# (check, mutant replacing the check's second function): every kept check has at least one.
SEEDED = [
    ("scanner-cut", "scan_in_two_forgetful"),       # "the previous event" kept per feed, not in the scanner
    ("oracle", "reading_proving"),                  # a human park taken as proof that earlier strays were spent
    ("oracle", "reading_overwriting"),              # the resume handler replaces the answer list
    ("fold-snapshot", "fold_from_lossy_snapshot"),  # the snapshot reader drops the park
    ("canonical", "canonical_wide_int"),            # ±2**53 accepted as safe integers
    ("canonical", "canonical_escapes_del"),         # DEL written \u007f
    ("canonical", "canonical_unsorted"),            # member names in insertion order
]


def _function(qualname: str) -> Any:
    module, _, name = qualname.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _value(text: str) -> Any:
    """A realized argument back from its repr (lists, tuples, dicts, str, int, float, None, bool)."""
    return eval(text, {"__builtins__": {}}, {"nan": math.nan, "inf": math.inf})  # noqa: S307  reprs CrossHair wrote


def _replayed(check: Check, result: CheckResult) -> tuple[Any, Any]:
    assert result.counterexample is not None
    args = {name: _value(text) for name, text in result.counterexample["args"].items()}
    return _function(check.first)(**args), _function(check.second)(**args)


def test_every_check_names_the_catalogue_entries_it_backs() -> None:
    from loomcheck.spec.catalogue import load_catalogue

    ids = set(load_catalogue().ids)
    for check in CHECKS:
        assert check.backs and set(check.backs) <= ids, check


def test_every_kept_check_has_a_seeded_mutant() -> None:
    assert {name for name, _ in SEEDED} == set(BY_NAME)


@pytest.mark.parametrize("check", CHECKS, ids=[check.name for check in CHECKS])
def test_no_difference_on_the_real_functions(check: Check) -> None:
    result = run_check(check)
    assert result.status in ("no-difference-found", "exhausted"), result
    assert result.iterations, result  # the search ran


@pytest.mark.parametrize(("name", "mutant"), SEEDED, ids=[f"{name}-{mutant}" for name, mutant in SEEDED])
def test_the_seeded_mutant_is_found(name: str, mutant: str) -> None:
    real = BY_NAME[name]
    check = Check(name, real.first, f"{MUTANTS_MODULE}.{mutant}", real.backs)
    result = run_check(check)
    assert result.status == "difference-found", result
    first, second = _replayed(check, result)
    assert first != second, (result, "the difference does not reproduce on plain values")
