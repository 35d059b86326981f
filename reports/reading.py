"""Reading a report.json back (for `loomcheck diff` and `loomcheck matrix`)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from loomcheck.reports.model import Report


class ReportUnreadable(Exception):
    """The file exists but is not a loomcheck report this version can read."""


def read_report(path: Path) -> Report:
    """The report at `path`. A missing file raises FileNotFoundError (a bad
    argument); anything else wrong raises ReportUnreadable naming the file."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such report file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportUnreadable(f"{path}: cannot be read: {exc}") from None
    try:
        return Report.model_validate_json(text)
    except ValidationError as exc:
        try:
            json.loads(text)
        except json.JSONDecodeError as bad:
            raise ReportUnreadable(f"{path}: not valid JSON: {bad}") from None
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ReportUnreadable(f"{path}: not a loomcheck report: field '{where}': {first['msg']}{more}") from None
