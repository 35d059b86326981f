"""The benchmarks run and report (docs/bench.md); their targets are judged by
`python -m loomcheck.bench`, never here: these machines are shared and noisy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loomcheck.bench import __main__ as bench
from loomcheck.bench.common import Figure


def test_every_section_reports_figures_in_quick_mode(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, "-m", "loomcheck.bench", "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # 2 would be a section that broke
    assert "Traceback" not in done.stdout + done.stderr
    figures = json.loads(out.read_text())["figures"]
    assert {f["section"] for f in figures} >= {"fold", "scanner", "stores", "suite", "explorer", "memory"}
    assert not [f for f in figures if f["value"] == "failed"]
    judged = [f for f in figures if f["target"] and not f["value"].startswith("skipped")]  # quick skips whole suites
    assert judged and all(isinstance(f["met"], bool) for f in judged)


def test_a_section_that_raises_is_a_failed_figure_not_a_traceback(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def broken(quick: bool) -> list[Figure]:
        raise RuntimeError("the section broke")

    monkeypatch.setattr("loomcheck.bench.fold.measure", broken)
    monkeypatch.setenv("COLUMNS", "300")  # one line per row, so the reason is found whole
    assert bench.main(["fold", "--quick"]) == 2
    printed = capsys.readouterr().out
    assert "the section broke" in printed and "Traceback" not in printed


def test_the_table_reads_whole_in_a_log(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Not on a terminal (a CI log), each figure's numbers and verdict stay on its row, unwrapped,
    at a fixed readable width; what is behind a figure wraps under its name instead."""
    monkeypatch.delenv("COLUMNS", raising=False)
    figures = [Figure("scanner", "warm scan at 100,000 vs at 1,000 events", "1.29x", "<= 2.00x", True,
                      "1,000: warm 152 us, cold 4.7 ms (4,681 ns/event); 10,000: warm 195 us, cold 148.7 ms "
                      "(14,868 ns/event); 100,000: warm 197 us, cold 3,870.1 ms (38,701 ns/event)"),
               Figure("scanner", "cold scan, 10,000 -> 100,000 events (linear: ~10x)", "26.03x", "5x-20x", False)]
    bench.console().print(bench.table(figures))
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line.rstrip()) <= bench.LOG_WIDTH for line in lines)
    for figure, verdict in zip(figures, ("met", "not met")):
        row = next(line for line in lines if line.startswith(figure.section) and figure.name in line)
        assert figure.value in row and figure.target in row and row.rstrip().endswith(verdict), row
    assert "(38,701 ns/event)" in "\n".join(lines)
