"""A `loomcheck run` in a process of its own, signalled as its user would: it must stop with
exit 2, no traceback, and a valid partial report (complete false, stopped "interrupted")."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from loomcheck.reports.model import Report


@contextmanager
def running(argv: list[str], **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """The run, killed on the way out if a failing test left it going."""
    harness = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        yield harness
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.communicate()


def interrupt(harness: subprocess.Popen[str], signum: int, report_dir: Path, timeout: float = 30,
              context: str = "") -> Report:
    """Send the signal; the report the run left, once it has been judged an interrupted one."""
    harness.send_signal(signum)
    out, err = harness.communicate(timeout=timeout)
    assert harness.returncode == 2, f"{context}{out}{err}"
    assert "Traceback" not in out + err, err
    report = Report.model_validate_json((report_dir / "report.json").read_text(encoding="utf-8"))
    assert (report.complete, report.stopped) == (False, "interrupted"), f"{context}{report.stopped}"
    return report
