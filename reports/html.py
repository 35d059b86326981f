"""The HTML conformance matrix: invariants (rows, grouped by ADR) by
implementations (columns, one per report.json), each cell the status, linked to
its counterexample. One self-contained file: inline CSS, no script, no network."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, Template

from loomcheck.reports.markdown import partial_because
from loomcheck.reports.model import ExplanationModel, InvariantRecord, Report, RootCause
from loomcheck.spec.catalogue import Catalogue, load_catalogue
from loomcheck.spec.files import SPEC_ROOT

TOOLTIP_LIMIT = 600


@dataclass(frozen=True)
class Column:
    name: str
    version: str
    schema: str | None
    how: str
    profile: str
    complete: bool
    partial_because: str | None
    source: str
    summary: str
    summary_class: str


@dataclass(frozen=True)
class Cell:
    label: str
    css: str
    href: str | None = None
    title: str | None = None


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    decision: str
    cells: list[Cell]


@dataclass(frozen=True)
class Why:
    """One failure's explanation, under the matrix."""

    id: str
    column: str
    anchor: str
    explanation: ExplanationModel


@dataclass(frozen=True)
class Causes:
    """One implementation's failures grouped by root cause, above the matrix."""

    column: str
    failed: int
    causes: list[RootCause]


@dataclass(frozen=True)
class Group:
    heading: str
    rows: list[Row]


def render_matrix(reports: list[tuple[Path, Report]], html_dir: Path | None = None,
                  catalogue: Catalogue | None = None) -> str:
    """The matrix as HTML. `reports` pairs each report with where its report.json
    is; links to counterexamples are made relative to `html_dir` (default: the
    current directory), where the HTML file will be written."""
    html_dir = html_dir or Path.cwd()
    catalogue = catalogue or load_catalogue()
    columns = [_column(path, report, html_dir) for path, report in reports]
    records = [{r.id: r for r in report.results} for _, report in reports]
    groups = []
    for adr, ids in _rows_by_adr(reports, catalogue).items():
        rows = []
        for invariant_id in ids:
            first = next(r[invariant_id] for r in records if invariant_id in r)
            cells = [_cell(r.get(invariant_id), path, html_dir) for r, (path, _) in zip(records, reports)]
            rows.append(Row(id=invariant_id, title=first.title, decision=first.decision, cells=cells))
        title = adr_titles().get(adr)
        groups.append(Group(heading=f"ADR {adr}" + (f": {title}" if title else ""), rows=rows))
    suites = sorted({report.suiteVersion for _, report in reports})
    whys = [Why(r.id, column.name, f"why-{index}-{r.id}", r.explanation)
            for index, (column, (_, report)) in enumerate(zip(columns, reports))
            for r in report.results if r.explanation is not None]
    causes = [Causes(column.name, sum(r.status == "fail" for r in report.results), report.rootCauses)
              for column, (_, report) in zip(columns, reports) if report.rootCauses]
    return _template().render(columns=columns, groups=groups, suites=suites, whys=whys, causes=causes,
                              rows=sum(len(g.rows) for g in groups))


@cache
def _template() -> Template:
    environment = Environment(loader=PackageLoader("loomcheck.reports", "templates"), autoescape=True,
                              trim_blocks=True, lstrip_blocks=True)
    return environment.get_template("matrix.html.j2")


def _rows_by_adr(reports: list[tuple[Path, Report]], catalogue: Catalogue) -> dict[str, list[str]]:
    """Every invariant any report has, in catalogue order (unknown ones after), under its ADR."""
    order = {invariant_id: index for index, invariant_id in enumerate(catalogue.ids)}
    adr_of: dict[str, str] = {}
    for _, report in reports:
        for record in report.results:
            adr_of.setdefault(record.id, record.adr)
    groups: dict[str, list[str]] = {}
    for invariant_id in sorted(adr_of, key=lambda i: (order.get(i, len(order)), i)):
        groups.setdefault(adr_of[invariant_id], []).append(invariant_id)
    return dict(sorted(groups.items()))


@cache
def adr_titles() -> dict[str, str]:
    """ADR titles, read from the catalogue's invariant files: the catalogue model
    carries none, but each file opens with `# ADR NNNN: what it decides, ...`."""
    titles: dict[str, str] = {}
    for path in sorted((p for p in (SPEC_ROOT / "invariants").iterdir() if p.name.endswith(".toml")),
                       key=lambda p: p.name):
        try:
            first = path.read_text(encoding="utf-8").splitlines()[0]
        except (OSError, IndexError, UnicodeDecodeError):
            continue
        match = re.match(r"#\s*ADR (\d{4}):\s*(.+?)(?:[,.]| \(|$)", first)
        if match:
            titles.setdefault(match.group(1), match.group(2).strip())
    return titles


def _column(path: Path, report: Report, html_dir: Path) -> Column:
    impl = report.implementation
    s = report.summary
    code = report.exit_code()
    parts = [f"{s.passed} pass", f"{s.failed} fail", f"{s.errors} error", f"{s.notApplicable} n/a"]
    if s.rootCauses:
        parts.insert(0, f"{s.rootCauses} root cause{'' if s.rootCauses == 1 else 's'}")
    if s.hazards:
        parts.append(f"{s.hazards} demonstrated")
    if s.expectedFailures:
        parts.append(f"{s.expectedFailures} expected")
    if report.unexpectedPasses:
        parts.append(f"{len(report.unexpectedPasses)} unexpected pass")
    return Column(name=impl.name, version=impl.version, schema=impl.eventSchema,
                  how=f"{impl.transport}: {impl.command or impl.spec}",
                  profile=report.profile + (f", seed {report.seed}" if report.seed is not None else ""),
                  complete=report.complete, partial_because=None if report.complete else partial_because(report),
                  source=_relative(path, html_dir), summary=" · ".join(parts),
                  summary_class={0: "pass", 1: "fail"}.get(code, "error"))


def _cell(record: InvariantRecord | None, report_path: Path, html_dir: Path) -> Cell:
    if record is None:
        return Cell(label="—", css="missing", title="not in this report")
    label, css = record.status, f"s-{record.status}"
    notes = [record.explanation.text if record.explanation is not None else record.message or ""]
    if record.rootCause is not None and record.rootCause != record.id:
        notes.insert(0, f"reported under the root cause {record.rootCause}")
    if record.manifest == "expected-failure":
        label, css = f"{record.status} (expected)", f"{css} expected"
    elif record.manifest == "unexpected-pass":
        label, css = "pass (unexpected)", f"{css} unexpected"
    elif record.disagrees:  # a choice the ADRs leave open (spec/profiles.toml), not a violation
        label, css = f"profile ({record.profile})", "s-hazard"
    if record.expected is not None:
        notes.append(f"manifest expects {record.expected.status}: {record.expected.reason}")
    href = None
    if record.counterexample:
        notes.append(f"counterexample: {record.counterexample}")
        href = counterexample_href(record.counterexample, report_path, html_dir)
    title = "\n".join(note for note in notes if note)
    if len(title) > TOOLTIP_LIMIT:
        title = title[: TOOLTIP_LIMIT - 1] + "…"
    return Cell(label=label, css=css, href=href, title=title or None)


def counterexample_href(counterexample: str, report_path: Path, html_dir: Path) -> str | None:
    """A link from the HTML's directory to a counterexample, if the file is found."""
    target = counterexample_file(counterexample, report_path)
    return None if target is None else quote(Path(_relative(target, html_dir)).as_posix())


def counterexample_file(counterexample: str, report_path: Path) -> Path | None:
    """Where a record's counterexample is now. The runner writes them under counterexamples/
    beside report.json, so that part of the path is taken from where the report is now (a
    report directory moves as a whole, e.g. as a CI artifact); any other path (a committed
    regression log) is found if it exists."""
    path = Path(counterexample)
    if "counterexamples" in path.parts:
        index = len(path.parts) - 1 - path.parts[::-1].index("counterexamples")
        return report_path.parent.joinpath(*path.parts[index:])
    if path.is_file():
        return path
    if path.parts[:2] == ("spec", "regressions"):  # a committed regression log, named within the package
        candidate = Path(str(SPEC_ROOT)).parent / path
        return candidate if candidate.is_file() else None
    return None


def _relative(target: Path, start: Path) -> str:
    return os.path.relpath(target.resolve(), start.resolve())
