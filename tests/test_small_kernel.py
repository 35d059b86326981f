"""The kernel a new user writes from docs/driver.md and the ADRs alone (tests/small_kernel.py)
passes the whole catalogue: a correct kernel that is not ours, with its own messages and extra
payload fields where no decision forbids them, is judged by what the decisions decide."""

from __future__ import annotations

import json
from pathlib import Path

from loomcheck.cli import main
from loomcheck.spec.catalogue import load_catalogue

KERNEL = Path(__file__).with_name("small_kernel.py")
DECLARED = {"fold", "recover", "resume-as", "resume-schemas", "input-validation", "restart"}


def test_the_whole_catalogue_passes_on_the_small_kernel(tmp_path: Path) -> None:
    code = main(["run", "--impl", f"python:{KERNEL}:make", "--report", str(tmp_path)])
    report = json.loads((tmp_path / "report.json").read_text())
    failing = {r["id"]: r.get("message") for r in report["results"] if r["status"] not in ("pass", "not-applicable")}
    assert failing == {}, json.dumps(failing, indent=1)
    assert report["findings"] == [], report["findings"]
    assert report["complete"] is True and code == 0
    assert set(report["implementation"]["features"]) == DECLARED
    status = {r["id"]: r["status"] for r in report["results"]}
    for invariant in load_catalogue().invariants:
        # Applicable exactly when the kernel declares every feature the invariant needs.
        applicable = set(invariant.requires) <= DECLARED
        assert (status[invariant.id] != "not-applicable") == applicable, invariant.id


def test_the_small_kernel_stays_small() -> None:
    lines = KERNEL.read_text().splitlines()
    assert len([line for line in lines if line.strip()]) <= 250, "the new user's kernel is about 200 lines of code"
    assert len(lines) <= 320
