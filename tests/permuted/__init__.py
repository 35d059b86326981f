"""The permuted reference (kernel.py): the reference kernel, or any seeded mutant of it, with
every choice the ADRs leave open made the other way. With tests/ on the import path:

    --impl python:permuted:make              the permuted reference, in-memory store
    --impl python:permuted:<mutant>          the permuted view of mutants.<mutant>.make()
    --impl python:permuted:<mutant>_with_loomcheck_digests   the same, digesting views as loomcheck does

A correct kernel that is not ours must pass every ADR invariant; a mutant must still be caught.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from permuted.kernel import OwnDigestsDriver, PermutedDriver
from permuted.proofs import wrap as with_own_proofs


def permute(inner: Any, own_digests: bool = True) -> Any:
    """Any driver, permuted, view digests over a canonical JSON of its own included unless
    `own_digests` is false (then loomcheck's bytes, and no profile disagreement)."""
    return with_own_proofs(OwnDigestsDriver(inner) if own_digests else PermutedDriver(inner))


def make() -> Any:
    from loomcheck.reference.driver import ReferenceDriver

    return permute(ReferenceDriver(store="memory"))


def make_reference_digests() -> Any:
    """The permuted reference with loomcheck's canonical JSON bytes (no profile disagreement)."""
    from loomcheck.reference.driver import ReferenceDriver

    return permute(ReferenceDriver(store="memory"), own_digests=False)


LOOMCHECK_DIGESTS = "_with_loomcheck_digests"


def __getattr__(name: str) -> Callable[[], Any]:
    """`python:permuted:<mutant>`: the factory of the permuted mutant. `<mutant>_with_loomcheck_digests`:
    the same with loomcheck's digest bytes, for a mutant whose bug is in the view digest that the
    permuted reference otherwise computes over a canonical JSON of its own (and so would mend)."""
    own_digests = not name.endswith(LOOMCHECK_DIGESTS)
    module = name if own_digests else name[: -len(LOOMCHECK_DIGESTS)]
    if name.startswith("__") or importlib.util.find_spec(f"mutants.{module}") is None:
        raise AttributeError(name)
    mutant = importlib.import_module(f"mutants.{module}")
    return lambda: permute(mutant.make(), own_digests)

