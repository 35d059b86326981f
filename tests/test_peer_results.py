"""Each committed peer run agrees with the manifest the peer ships: every failure it holds is
expected, with the status expected, and nothing the manifest expects to fail passes. A run
committed before its manifest changed (or the reverse) fails here, naming the invariants."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomcheck.peers import PEERS, peer_manifest
from loomcheck.reports.reading import read_report
from loomcheck.reports.regenerate import peer_reports
from loomcheck.run.manifest import apply_manifest, load_manifest

COMMITTED = {path.parent.name: path for path in peer_reports()}


def disagreements(name: str, manifest: Path | None = None) -> list[str]:
    """What the committed run of peer `name` holds that its manifest (the shipped one) does not say."""
    report = read_report(COMMITTED[name])
    manifest = manifest or peer_manifest(name)
    assert manifest is not None
    apply_manifest(report, load_manifest(manifest))
    wrong = [f"{r.id}: {r.status}, not expected" for r in report.results
             if r.status in ("fail", "error") and r.manifest is None and not r.disagrees]
    wrong += [f"{r.id}: {r.status}, expected {r.expected.status}" for r in report.results
              if r.manifest == "still-failing-differently" and r.expected is not None]
    wrong += [f"{invariant}: passes, expected to fail" for invariant in report.unexpectedPasses]
    if not report.complete:
        wrong.append(f"the run is partial ({report.stopped})")
    return wrong


def test_every_peer_run_is_committed() -> None:
    assert sorted(COMMITTED) == sorted(PEERS), "a peer with no committed run: regenerate --peers NAME"


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_a_committed_peer_run_agrees_with_its_manifest(name: str) -> None:
    wrong = disagreements(name)
    assert not wrong, (f"results/peers/{name} disagrees with peers/{PEERS[name].manifest}: " + "; ".join(wrong)
                       + f" (run it again: python -m loomcheck.reports.regenerate --peers {name})")


def test_the_check_sees_a_disagreement(tmp_path: Path) -> None:
    """A manifest that expects nothing makes every failure of a committed run a disagreement."""
    name = next(n for n in sorted(COMMITTED) if read_report(COMMITTED[n]).summary.failed)
    empty = tmp_path / "empty.toml"
    empty.write_text("", encoding="utf-8")
    assert any("not expected" in line for line in disagreements(name, empty))
