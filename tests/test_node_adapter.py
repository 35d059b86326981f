"""The example adapter in JavaScript (examples/node/kernel.mjs) through the stdio
transport, as a third party would run it: a complete report, no finding of the
implementation failing, some invariants passing, every invariant that needs a
feature the kernel does not declare reported not-applicable, and each status what
the committed report (results/node-example) says."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from loomcheck.cli import main
from loomcheck.spec.catalogue import load_catalogue

NODE = shutil.which("node")
ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "examples" / "node" / "kernel.mjs"
COMMITTED = ROOT / "results" / "node-example" / "report.json"
# The kernel's own ground (gates, resume ingress, the fold, recovery) and two
# families that need features it does not declare (human steps, approvals).
ONLY = ["gate.", "resume.", "fold.", "recovery.", "refusal.", "human.", "approvals.digest-"]

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the JavaScript example adapter cannot run")


def test_the_node_example_adapter_runs_through_the_harness(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    impl = "stdio:" + shlex.join([str(NODE), str(KERNEL)])
    code = main(["run", "--impl", impl, "--only", *ONLY, "--report", str(tmp_path)])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())

    assert report["complete"] is True, out
    assert report["implementation"]["name"] == "tiny-node-kernel"
    assert report["implementation"].get("transport") == "stdio"
    failures = [f for f in report["findings"] if f["kind"] == "implementation-error"]
    assert not failures, failures
    statuses = {r["id"]: r for r in report["results"]}
    errors = {i: r["message"] for i, r in statuses.items() if r["status"] == "error"}
    assert not errors, errors
    assert report["summary"]["errors"] == 0
    assert any(r["status"] == "pass" for r in statuses.values()), out

    declared = set(report["implementation"]["features"])
    catalogue = load_catalogue()
    needing_more = [i for i in statuses if set(catalogue.get(i).requires) - declared]
    assert needing_more, "the selection should include invariants the kernel cannot run"
    for invariant_id in needing_more:
        assert statuses[invariant_id]["status"] == "not-applicable", (invariant_id, statuses[invariant_id])
    assert code in (0, 1), out  # 1: an invariant failed, which a tiny kernel may do; never 2 (partial)

    committed = {r["id"]: r["status"] for r in json.loads(COMMITTED.read_text(encoding="utf-8"))["results"]}
    stale = {i: (committed.get(i), r["status"]) for i, r in statuses.items() if committed.get(i) != r["status"]}
    assert not stale, f"results/node-example is stale (committed, now): {stale}; run " \
                      "`.venv/bin/python -m loomcheck.reports.regenerate` and commit the result"
