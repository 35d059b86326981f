"""Whether an invariant applies to an implementation, decided in one place for the runner,
`loomcheck replay`, `loomcheck repro`, the pytest plugin (through the runner), the benchmarks
and the feature fence: what hello declares, less what the implementation's manifest withholds
or sets aside (docs/cli.md#manifests)."""

from __future__ import annotations

from typing import Iterable

from loomcheck.contract.driver import Hello
from loomcheck.contract.needs import operations_need
from loomcheck.contract.script import Operation
from loomcheck.run.manifest import Manifest
from loomcheck.spec.catalogue import Invariant
from loomcheck.spec.vocabulary import version_key


def declared_features(hello_features: Iterable[str], manifest: Manifest | None) -> list[str]:
    """The features a run treats as declared: hello's, less the manifest's unsupported ones."""
    unsupported = set(manifest.unsupported) if manifest is not None else set()
    return [feature for feature in hello_features if feature not in unsupported]


def not_applicable_because(invariant: Invariant, hello: Hello, manifest: Manifest | None = None) -> str | None:
    """Why `invariant` does not apply to the implementation that said `hello`, or None when it
    does: a driver feature it needs that hello does not declare or the manifest marks
    unsupported, an EVENT_SCHEMA older than the invariant, or the manifest's [[not-applicable]]
    entry for it."""
    withheld = set(hello.features) - set(declared_features(hello.features, manifest))
    missing = [f for f in invariant.requires if f not in hello.features or f in withheld]
    if missing:
        held = [f for f in missing if f in withheld]
        if held and manifest is not None:
            return f"needs driver feature(s) {', '.join(missing)}; the manifest marks {', '.join(held)} unsupported: " \
                   f"{manifest.features.reason or 'no reason given'}"
        return f"needs driver feature(s) {', '.join(missing)}, which {hello.name} does not declare"
    if version_key(invariant.since) > version_key(hello.eventSchema):
        return f"applies from EVENT_SCHEMA {invariant.since}; {hello.name} declares {hello.eventSchema}"
    set_aside = manifest.not_applicable_reason(invariant.id) if manifest is not None else None
    return f"the manifest: {set_aside}" if set_aside is not None else None


def undeclared_needs(operations: Iterable[Operation], features: Iterable[str]) -> list[str]:
    """The driver features a script reaches (contract/needs.py) that are not among `features`:
    a case that needs one is skipped, never judged."""
    return sorted(operations_need(operations) - set(features))
