"""Writing report.json, summary.md, report.html and junit.xml. Each write
replaces the file atomically, so a reader (or an interrupted run) never sees
half a report."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from loomcheck.reports.html import render_matrix
from loomcheck.reports.markdown import render_markdown
from loomcheck.reports.model import Report
from loomcheck.reports.reading import read_report


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def write_json(report: Report, path: Path) -> None:
    # Compact: a report is read by programs (diff, matrix, docs), and indenting a run's nested
    # explanations and corpora multiplies its size; `python -m json.tool` shows it to a person.
    write_atomically(path, report.model_dump_json() + "\n")


def write_markdown(report: Report, path: Path) -> None:
    write_atomically(path, render_markdown(report))


def write_html(report_paths: list[Path], path: Path) -> None:
    """The conformance matrix of the reports at `report_paths`, linked relative to `path`."""
    reports = [(report_path, read_report(report_path)) for report_path in report_paths]
    write_atomically(path, render_matrix(reports, html_dir=path.parent))


def xml_suite_properties(suite: TestSuite, report: Report) -> None:
    """The distinct root causes lead: their count, and each head with what it also violates."""
    suite.add_property("root-causes", str(len(report.rootCauses)))
    for number, cause in enumerate(report.rootCauses, start=1):
        also = f"; also violated by this counterexample: {', '.join(cause.alsoViolated)}" if cause.alsoViolated else ""
        same = f"; same cause: {', '.join(cause.sameCause)}" if cause.sameCause else ""
        suite.add_property(f"root-cause-{number}", f"{cause.head}{also}{same}")


def write_junit(report: Report, path: Path) -> None:
    suite = TestSuite(f"loomcheck: {report.implementation.name}")
    for record in report.results:
        case = TestCase(record.id, classname=f"adr{record.adr}")
        detail = record.explanation.text if record.explanation is not None else record.message or ""
        if record.counterexample:
            detail += f"\ncounterexample: {record.counterexample}"
        if record.excused and record.expected is not None:
            # What pytest does with an xfail: skipped, so a CI's test view agrees with the exit code.
            case.result = [Skipped(f"expected {record.status} (manifest): {record.expected.reason}")]
            case.system_out = detail
        elif record.disagrees and report.profileChecks != "strict":
            # A choice the ADRs leave open (spec/profiles.toml): reported, never a conformance failure.
            case.result = [Skipped(f"profile disagreement ({record.profile}): {record.message or ''}")]
            case.system_out = detail
        elif record.status == "fail":
            case.result = [Failure(record.message or "violated", "InvariantViolated")]
            case.system_out = detail
        elif record.status == "error":
            case.result = [Error(record.message or "error", "ImplementationError")]
            case.system_out = detail
        elif record.status == "not-applicable":
            case.result = [Skipped(record.message or "not applicable")]
        elif record.status in ("hazard", "residual", "not-reproduced"):
            case.result = [Skipped(f"{record.kind.replace('-', ' ')}, {record.status}: {record.message or ''}")]
        suite.add_testcase(case)
    for record in report.results:  # a failure grouped under another's root cause says so, first
        for case in suite:
            if case.name == record.id and record.rootCause not in (None, record.id) and not record.excused:
                case.system_out = f"root cause: {record.rootCause} (its counterexample also violates this)\n" \
                                  + (case.system_out or "")
    xml_suite_properties(suite, report)
    for finding in report.findings:
        case = TestCase(f"finding: {finding.kind}", classname="loomcheck")
        case.result = [Error(finding.message, finding.kind)]
        suite.add_testcase(case)
    xml = JUnitXml()
    xml.add_testsuite(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    xml.write(str(path), pretty=True)
