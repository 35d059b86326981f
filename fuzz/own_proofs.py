"""Alterations of an implementation's own proof (feature "signing"), opaque to the suite: any JSON
object. ADR 0117 D2 binds the signed fields, not a proof's spelling, so only alterations that change
what a member carries: the same bytes spelled another way (hex in upper case, base64's other
alphabet, padding, whitespace) or a member added beside the signed ones is no forgery."""

from __future__ import annotations

from collections.abc import Iterator

from loomcheck.contract.signing import other_character

__all__ = ["OWN_PROOF_CATEGORIES", "own_proof_mutations"]

OWN_PROOF_CATEGORIES = ("proof-character-changed", "proof-truncated", "proof-extended",
                        "proof-member-dropped", "proof-number-moved")


def own_proof_mutations(proof: dict) -> Iterator[tuple[str, dict]]:
    """(category, altered proof): generic changes of an opaque proof object (ADR 0117 D2: whatever
    its encoding, a verifier accepts exactly what its signer produced). Each differs from `proof`."""
    seen: list[dict] = [proof]

    def fresh(category: str, altered: dict) -> Iterator[tuple[str, dict]]:
        if altered not in seen:
            seen.append(altered)
            yield category, altered

    for name in sorted(proof):
        value = proof[name]
        if isinstance(value, str) and value:
            # Not the last character: in unpadded base64 it may carry only bits a decoder drops.
            for at in dict.fromkeys((0, len(value) // 2)):
                yield from fresh("proof-character-changed",
                                 {**proof, name: value[:at] + other_character(value[at]) + value[at + 1:]})
            for cut in dict.fromkeys((len(value) - 1, len(value) // 2, 1, 0)):
                yield from fresh("proof-truncated", {**proof, name: value[:cut]})
            for tail in ("A", "0", value):
                yield from fresh("proof-extended", {**proof, name: value + tail})
        elif isinstance(value, int) and not isinstance(value, bool):
            for moved in (value + 1, value - 1):
                yield from fresh("proof-number-moved", {**proof, name: moved})
        yield from fresh("proof-member-dropped", {k: v for k, v in proof.items() if k != name})
