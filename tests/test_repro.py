"""`loomcheck repro`: a counterexample as a reproducer the kernel's
maintainers run without loomcheck's harness; it exits 1 while the failure
reproduces and 0 on a kernel without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loomcheck.cli import main

HERE = Path(__file__).parent
LOG = HERE.parent / "spec/regressions/0104-crash-before-go1.json"  # ADR 0104's own bug: recovery answers go1
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=300, env=ENV, cwd=HERE)


def test_the_python_reproducer_reproduces_on_the_mutant_and_not_on_the_reference(tmp_path: Path) -> None:
    assert run(sys.executable, "-m", "loomcheck", "repro", str(LOG), "--impl", "python:mutants.recovery_resumes:make",
               "--out", str(tmp_path / "mutant")).returncode == 0
    script = tmp_path / "mutant" / "repro.py"
    source = script.read_text()
    assert "loomcheck.harness" not in source and "from mutants.recovery_resumes import make as make" in source
    done = run(sys.executable, str(script))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "expected: ADR 0104 D1's table" in done.stdout and "happened: #" in done.stdout

    assert run(sys.executable, "-m", "loomcheck", "repro", str(LOG), "--impl", "reference:memory",
               "--out", str(tmp_path / "reference")).returncode == 0
    fixed = run(sys.executable, str(tmp_path / "reference" / "repro.py"))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script")
def test_the_stdio_reproducer_is_the_exact_exchange_piped_into_the_command(tmp_path: Path) -> None:
    command = f"{sys.executable} -m loomcheck serve --impl python:mutants.recovery_resumes:make"
    assert run(sys.executable, "-m", "loomcheck", "repro", str(LOG), "--impl", f"stdio:{command}",
               "--out", str(tmp_path)).returncode == 0
    requests = (tmp_path / "requests-1.jsonl").read_text().splitlines()
    assert '"op":"hello"' in requests[0] and any('"op":"recover"' in line for line in requests)
    done = run("sh", str(tmp_path / "repro.sh"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "it reproduces" in done.stdout
    assert (tmp_path / "got-1.jsonl").read_bytes() == (tmp_path / "answers-1.jsonl").read_bytes()


def test_a_missing_file_is_a_usage_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["repro", str(tmp_path / "nothing.json")])
    assert code != 0 and "Traceback" not in capsys.readouterr().out
