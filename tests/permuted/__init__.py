"""The permuted reference (kernel.py): the reference kernel, or any seeded mutant of it, with
every choice the ADRs leave open made the other way. With tests/ on the import path:

    --impl python:permuted:make              the permuted reference, in-memory store
    --impl python:permuted:<mutant>          the permuted view of mutants.<mutant>.make()

A correct kernel that is not ours must pass every ADR invariant; a mutant must still be caught.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from permuted.kernel import OwnDigestsDriver, PermutedDriver


def _with_own_proofs(driver: Any) -> Any:
    # HOOK for the lead: the proof wire format is another helper's part. When tests/permuted/proofs.py
    # exists it wraps the driver so that it signs and verifies approvals in an encoding of its own
    # (expected entry point: `proofs.wrap(driver) -> driver`); until then approvals use spec/signing.md.
    if importlib.util.find_spec("permuted.proofs") is None:
        return driver
    proofs = importlib.import_module("permuted.proofs")
    wrap = getattr(proofs, "wrap", None)
    return wrap(driver) if callable(wrap) else driver


def permute(inner: Any) -> Any:
    """Any driver, permuted, view digests over a canonical JSON of its own included."""
    return _with_own_proofs(OwnDigestsDriver(inner))


def make() -> Any:
    from loomcheck.reference.driver import ReferenceDriver

    return permute(ReferenceDriver(store="memory"))


def make_reference_digests() -> Any:
    """The permuted reference with loomcheck's canonical JSON bytes (no profile disagreement)."""
    from loomcheck.reference.driver import ReferenceDriver

    return _with_own_proofs(PermutedDriver(ReferenceDriver(store="memory")))


def __getattr__(name: str) -> Callable[[], Any]:
    """`python:permuted:<mutant>`: the factory of the permuted mutant."""
    if name.startswith("__") or importlib.util.find_spec(f"mutants.{name}") is None:
        raise AttributeError(name)
    mutant = importlib.import_module(f"mutants.{name}")
    return lambda: permute(mutant.make())

