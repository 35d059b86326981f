"""Seeded mutants of the permuted reference's own proof format (tests/permuted/proofs.py): each
breaks ADR 0117 D2 in the verifier of a kernel that signs its own approvals, where only the
tampering of its own proof's bytes can see it. With tests/ on the import path:

    --impl python:permuted.proof_mutants:<name>

tests/test_signing_operation.py holds each to the invariant that must catch it."""

from __future__ import annotations

from typing import Any

from permuted import make as _permuted_reference
from permuted.proofs import OwnProofsDriver

PREFIX = 10  # characters of the MAC the mutant compares

# mutant -> the invariants that must catch it
CATCHES: dict[str, tuple[str, ...]] = {"prefix_mac": ("approvals.signature-bound",)}


def _prefix_only(given: str, expected: str) -> bool:
    # The bug: a MAC changed, truncated or extended past its first characters still verifies.
    return len(given) >= PREFIX and given[:PREFIX] == expected[:PREFIX]


def prefix_mac() -> Any:
    """The permuted reference whose verifier compares only the first characters of its MAC."""
    permuted = _permuted_reference()
    inner = permuted.inner if isinstance(permuted, OwnProofsDriver) else permuted
    return OwnProofsDriver(inner, compare=_prefix_only)
