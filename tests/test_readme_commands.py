"""The README opens with two commands, and CI runs exactly the second one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The shell blocks of the README's "Two commands" section, in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S)]


def test_the_readme_starts_with_an_install_and_run_and_a_test_command() -> None:
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert "loomcheck run" in commands[0] and "pip install" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().splitlines()
    assert script[-1].strip() == readme_commands()[1]
