"""Every command loomcheck prints runs where it is printed: each is taken from the output of a real
`loomcheck run` (then `repro`, then `diff`) and run as printed, by a shell, in a scratch directory
outside the checkout, with the kernel named by a relative file spec; a committed regression log
is named so that loomcheck finds it from any directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loomcheck.cli import main

TESTS = Path(__file__).parent  # the seeded mutants
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
KERNEL = "from mutants.recovery_resumes import make  # recovery records an answer (ADR 0104 D1)\n"
IMPL = "python:kernel.py:make"
# The lines that end in a command: "replay: CMD", "replay ID: CMD" (diff), "...of any counterexample
# above: CMD" (run), "run it from here: CMD  (exit 1 while it reproduces)" (repro).
PRINTED = re.compile(r"^\s*(?:replay(?: [\w.-]+)?|a reproducer for .*? above|run it from here): "
                     r"(?P<command>.+?)(?:  \(exit 1 while it reproduces\))?$")


def loomcheck() -> list[str]:
    """loomcheck as a user starts it: the environment's own command when it has one."""
    script = Path(sys.executable).parent / "loomcheck"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "loomcheck"]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, env=ENV)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command exactly as printed, through the shell a user pastes it into."""
    return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=600, env=ENV)


def printed(out: str) -> list[str]:
    return [found["command"] for line in out.splitlines() if (found := PRINTED.match(line))]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    (folder / "kernel.py").write_text(KERNEL, encoding="utf-8")
    return folder


def test_a_failing_runs_commands_run_where_they_are_printed(scratch: Path) -> None:
    done = run([*loomcheck(), "run", "--impl", IMPL, "--only", "recovery.records-no-answer", "--profile", "peers-slow",
                "--report", "out"], scratch)
    assert done.returncode == 1, done.stdout + done.stderr
    commands = printed(done.stdout)
    replays = [c for c in commands if " replay " in c]
    repros = [c for c in commands if " repro " in c]
    assert replays and repros, done.stdout
    for command in replays:
        replayed = shell(command, scratch)
        assert replayed.returncode == 1, command + "\n" + replayed.stdout + replayed.stderr
        assert "violated recovery.records-no-answer" in replayed.stdout

    written = shell(repros[0], scratch)
    assert written.returncode == 0, written.stdout + written.stderr
    (run_it,) = printed(written.stdout)
    script = next(Path(scratch, line.split(" ", 1)[1]) for line in written.stdout.splitlines() if line.startswith("wrote "))
    source = script.read_text(encoding="utf-8")
    # The kernel is imported by the spec given, relative to where the script runs: no absolute path.
    assert "spec_from_file_location('kernel', 'kernel.py')" in source and str(scratch) not in source
    reproduced = shell(run_it, scratch)
    assert reproduced.returncode == 1, run_it + "\n" + reproduced.stdout + reproduced.stderr

    (files,) = [line[len("report: "):] for line in done.stdout.splitlines() if line.startswith("report: ")]
    for path in files.split(", "):
        assert (scratch / path).is_file(), path
    assert "summary.md has the table" in done.stdout  # the coverage line's hint: a file listed above

    # diff against a passing base, after the report folder moved (as a CI artifact does): the
    # replay it prints finds the counterexample where the report is now.
    base = run([*loomcheck(), "run", "--impl", "reference:memory", "--only", "recovery.records-no-answer",
                "--profile", "peers-slow", "--report", "base"], scratch)
    assert base.returncode == 0, base.stdout + base.stderr
    (scratch / "out").rename(scratch / "artifact")
    diffed = run([*loomcheck(), "diff", "base/report.json", "artifact/report.json"], scratch)
    assert diffed.returncode == 1, diffed.stdout + diffed.stderr
    (from_diff,) = printed(diffed.stdout)
    assert "artifact/counterexamples/recovery.records-no-answer.json" in from_diff, from_diff
    assert shell(from_diff, scratch).returncode == 1


def test_a_failure_found_by_a_committed_log_is_named_as_loomcheck_finds_it(scratch: Path, tmp_path: Path) -> None:
    done = run([*loomcheck(), "run", "--impl", IMPL, "--only", "indoubt.legacy-verdict", "--profile", "peers-slow",
                "--report", "out"], scratch)
    assert done.returncode == 1, done.stdout + done.stderr
    commands = printed(done.stdout)
    (replay,) = [c for c in commands if " replay " in c]
    (repro,) = [c for c in commands if " repro " in c]
    assert " replay 0104-legacy-verdict-goes-stale --impl " in replay and "spec/regressions" not in replay, replay
    replayed = shell(replay, scratch)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    written = shell(repro, scratch)  # a committed log named: the reproducer is written here, not in the package
    assert written.returncode == 0, written.stdout + written.stderr
    assert (scratch / "0104-legacy-verdict-goes-stale.repro" / "repro.py").is_file()
    (run_it,) = printed(written.stdout)
    assert shell(run_it, scratch).returncode == 1

    elsewhere = tmp_path / "elsewhere"  # the name resolves from any directory
    elsewhere.mkdir()
    on_reference = run([*loomcheck(), "replay", "0104-legacy-verdict-goes-stale"], elsewhere)
    assert on_reference.returncode == 0, on_reference.stdout + on_reference.stderr
    # A path as older reports record it works too.
    assert run([*loomcheck(), "replay", "spec/regressions/0057-three-gate-completion.json"], elsewhere).returncode == 0


def test_an_unknown_log_name_suggests_the_nearest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "0057-three-gate-complete"]) == 3
    out = capsys.readouterr().out
    assert "did you mean 0057-three-gate-completion" in out and "Traceback" not in out, out
    assert main(["repro", "no-such-log-at-all"]) == 3
    assert "no committed regression log of that name" in capsys.readouterr().out
