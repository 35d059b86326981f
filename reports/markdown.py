"""summary.md: the report as Markdown for CI logs (a GitHub step summary). What
needs attention comes first; everything else is folded into <details>. Plain
enough to read in a terminal too."""

from __future__ import annotations

import re

from loomcheck.reports.model import CoverageRow, ExplanationModel, InvariantRecord, Report

MESSAGE_LIMIT = 300  # characters of a message in a table cell; report.json has it whole
FAILING = ("fail", "error")
# Characters Markdown would read as syntax; an underscore inside a word (EVENT_SCHEMA)
# is left alone, since it cannot start emphasis there and escaping it hurts in a terminal.
_SPECIAL = re.compile(r"([\\`*\[\]|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def render_markdown(report: Report) -> str:
    lines = [f"## loomcheck: {_text(_implementation(report))}", "", _text(_header(report)), "", _counts(report), ""]
    lines += _attention(report)
    lines += _coverage(report)
    lines += ["<details>", f"<summary>All {len(report.results)} invariants, corpora and findings</summary>", ""]
    lines += _all_invariants(report)
    lines += _corpora(report)
    lines += _findings(report)
    lines += ["</details>", ""]
    return "\n".join(lines)


# -- header --------------------------------------------------------------------------
def _implementation(report: Report) -> str:
    impl = report.implementation
    if impl.name == "unknown":  # it never said hello
        return impl.spec
    schema = f" (EVENT_SCHEMA {impl.eventSchema})" if impl.eventSchema else ""
    return f"{impl.name} {impl.version}{schema}"


def _header(report: Report) -> str:
    impl = report.implementation
    how = f"{impl.transport}: {impl.command}" if impl.command else f"{impl.transport}: {impl.spec}"
    parts = [how, f"profile {report.profile}"]
    if report.seed is not None:
        parts.append(f"seed {report.seed}")
    parts.append(f"loomcheck {report.suiteVersion}")
    parts.append("complete" if report.complete else f"PARTIAL ({partial_because(report)})")
    return " · ".join(parts)


def partial_because(report: Report) -> str:
    if report.stopped:
        return report.stopped
    if report.findings:
        return f"{report.findings[0].kind}: {_shorten(report.findings[0].message, 120)}"
    return "the run stopped early"


def _counts(report: Report) -> str:
    s = report.summary
    causes = f"{s.rootCauses} root cause{'' if s.rootCauses == 1 else 's'}: " if s.rootCauses else ""
    text = f"**{causes}{s.passed} passed, {s.failed} failed, {s.errors} errors, {s.notApplicable} not applicable"
    if s.hazards:
        text += f", {s.hazards} demonstrations"
    text += f"** in {report.wallSeconds:.1f}s ({report.stateMachineSteps} state-machine steps)"
    if s.expectedFailures:
        text += f"; {s.expectedFailures} expected by the manifest"
    if s.profileDisagreements:
        counted = "counted" if report.profileChecks == "strict" else "not counted in conformance"
        text += f"; {s.profileDisagreements} profile disagreements ({counted}, spec/profiles.toml)"
    if report.unexpectedPasses:
        text += f"; {len(report.unexpectedPasses)} unexpected passes"
    return text + "."


# -- what needs attention ------------------------------------------------------------
def _attention(report: Report) -> list[str]:
    failing = [r for r in report.results if r.status in FAILING]
    # Failures the manifest does not excuse first, then the expected ones.
    failing.sort(key=lambda r: r.excused)
    lines: list[str] = _root_causes(report)
    if failing:
        lines += ["### Not passing", "", "| invariant | status | ADR | root cause | message | counterexample |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for r in failing:
            lines.append(f"| {_code(r.id)} | {_status(r)} | {r.adr} {_text(r.decision)} | "
                         f"{_code(r.rootCause) if r.rootCause else ''} | "
                         f"{_text(_shorten(r.message or '', MESSAGE_LIMIT))} | "
                         f"{_code(r.counterexample) if r.counterexample else ''} |")
        lines.append("")
        # One explanation per root cause (its head's), and one per failure not grouped (an error, an older report).
        explained = [r for r in failing if r.explanation is not None and r.rootCause in (None, r.id)]
        if explained:
            lines += ["### Why they fail", ""]
            for r in explained:
                lines += [f"#### {_code(r.id)}", "", _explanation(r.explanation), ""]  # type: ignore[arg-type]
    if report.unexpectedPasses:
        lines += ["### Unexpected passes", "", "The manifest expects these to fail; they passed "
                  "(update the manifest: `loomcheck run --write-manifest FILE`).", ""]
        for r in report.results:
            if r.manifest == "unexpected-pass" and r.expected is not None:
                lines.append(f"- {_code(r.id)}: expected {r.expected.status}, {_text(r.expected.reason)}")
        lines.append("")
    if not failing and not report.unexpectedPasses:
        shown = (f" {report.summary.hazards} documented hazards or residuals were demonstrated (not failures)."
                 if report.summary.hazards else "")
        lines += [("Nothing failed." if report.complete else "Nothing failed, but the run is PARTIAL.") + shown, ""]
    return lines


def _root_causes(report: Report) -> list[str]:
    """The distinct root causes first: each counterexample once, with what else it violates."""
    if not report.rootCauses:
        return []
    failed = sum(r.status == "fail" for r in report.results)
    count = len(report.rootCauses)
    lines = [f"### {count} root cause{'' if count == 1 else 's'} of {failed} failing invariant{'' if failed == 1 else 's'}", "",
             "| # | root cause | ADR | also violated by this counterexample | same cause | counterexample |",
             "| ---: | --- | --- | --- | --- | --- |"]
    for number, c in enumerate(report.rootCauses, start=1):
        lines.append(f"| {number} | {_code(c.head)}: {_text(_shorten(c.message or c.title, MESSAGE_LIMIT))} | "
                     f"{c.adr} {_text(c.decision)} | {', '.join(_code(i) for i in c.alsoViolated)} | "
                     f"{', '.join(_code(i) for i in c.sameCause)} | {_code(c.counterexample) if c.counterexample else ''} |")
    return lines + [""]


def _explanation(e: ExplanationModel) -> str:
    """The explanation as Markdown, the same parts in the same order as the terminal's."""
    where = f"ADR {e.adr} {_text(e.decision)}"
    lines = [f"**{where}** ({_code(e.catalogueEntry)}): {_text(e.claim)}", ""]
    lines += [f"- {_code(f'#{ev.seq} {ev.type} {ev.payload}'.rstrip())}: {_text(ev.role)}; just before it the "
              f"execution was {_text(ev.before)}." for ev in e.evidence]
    if e.expected:
        lines.append(f"- What {where} requires instead: {_text(e.expected)}")
    if e.rule:
        lines += ["", f"> {_text(e.rule)}"]
    return "\n".join(lines)


def _status(record: InvariantRecord) -> str:
    if record.disagrees:  # a choice the ADRs leave open (spec/profiles.toml), apart from conformance
        return f"profile ({record.profile})"
    if record.manifest == "expected-failure":
        return f"{record.status} (expected)"
    if record.manifest == "unexpected-pass":
        return "pass (unexpected)"
    if record.manifest == "still-failing-differently" and record.expected is not None:
        return f"**{record.status}** (expected {record.expected.status})"
    return f"**{record.status}**" if record.status in FAILING else record.status


# -- coverage -------------------------------------------------------------------------
COVERAGE_KINDS = {"refusal": "refusal reasons", "verdict": "scanner verdicts and ambiguity shapes",
                  "recording-row": "ADR 0104 recording-table rows", "emit-rule": "emit-guard rules"}


def _coverage(report: Report) -> list[str]:
    """Per kind, reached / applicable and by which layers; the gaps listed (each is also a
    suite-error finding); the full table folded away."""
    if not report.coverage:
        return []
    lines = ["### Coverage", "", "| kind | reached | by layer | not applicable |", "| --- | --- | --- | --- |"]
    for kind, label in COVERAGE_KINDS.items():
        rows = [r for r in report.coverage if r.kind == kind]
        if not rows:
            continue
        applicable = [r for r in rows if r.applicable]
        reached = [r for r in applicable if r.reachedBy]
        layers: dict[str, int] = {}
        for r in reached:
            for layer in r.reachedBy:
                layers[layer] = layers.get(layer, 0) + 1
        by = ", ".join(f"{layer} {count}" for layer, count in sorted(layers.items(), key=lambda lc: (-lc[1], lc[0])))
        mark = "" if len(reached) == len(applicable) else " **gap**"
        lines.append(f"| {label} | {len(reached)}/{len(applicable)}{mark} | {_text(by or 'none')} | "
                     f"{len(rows) - len(applicable)} |")
    gaps = [r for r in report.coverage if r.applicable and not r.reachedBy]
    lines.append("")
    if gaps:
        lines += [f"**{len(gaps)} applicable items no layer reached** (a failure of the suite, not of the implementation):", ""]
        lines += [f"- {_code(r.kind + ':' + r.name)} ({_adr(r)})" for r in gaps]
    else:
        lines.append("Every applicable item was reached.")
    lines += ["", "<details>", f"<summary>Coverage of all {len(report.coverage)} items</summary>", "",
              "| item | ADR | reached by | note |", "| --- | --- | --- | --- |"]
    for r in report.coverage:
        by = ", ".join(r.reachedBy) if r.reachedBy else ("**none**" if r.applicable else "not applicable")
        note = "" if r.reachedBy else (r.why or "")
        lines.append(f"| {_code(r.kind + ':' + r.name)} | {_adr(r)} | {by} | {_text(_shorten(note, 160))} |")
    return lines + ["", "</details>", ""]


def _adr(row: CoverageRow) -> str:
    return _text(f"{row.adr} {row.decision}" if row.adr else row.decision)


# -- the folded part -----------------------------------------------------------------
def _all_invariants(report: Report) -> list[str]:
    lines = ["| invariant | ADR | status | examples | note |", "| --- | --- | --- | --- | --- |"]
    for r in report.results:
        note = r.expected.reason if r.expected is not None else (r.message or "")
        lines.append(f"| {_code(r.id)} | {r.adr} {_text(r.decision)} | {_status(r)} | {r.examples} | "
                     f"{_text(_shorten(note, 160))} |")
    return lines + [""]


def _corpora(report: Report) -> list[str]:
    if not report.corpora:
        return []
    lines = ["| corpus | cases | violations | demonstrations | per category |", "| --- | --- | --- | --- | --- |"]
    for c in report.corpora:
        categories = ", ".join(f"{name} {count}" for name, count in c.perCategory.items())
        lines.append(f"| {_text(c.name)} | {c.cases} | {c.violations} | {c.demonstrations} | {_text(categories)} |")
    return lines + [""]


def _findings(report: Report) -> list[str]:
    if not report.findings:
        return ["No findings outside the invariants.", ""]
    lines = ["Findings:", ""]
    for f in report.findings:
        reason = f" ({f.reason})" if f.reason else ""
        where = f", counterexample {_code(f.counterexample)}" if f.counterexample else ""
        lines.append(f"- {f.kind}{reason}: {_text(_shorten(f.message, 600))}{where}")
    return lines + [""]


# -- escaping ------------------------------------------------------------------------
def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())  # a table row is one line
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(text: str) -> str:
    """Literal text in Markdown: no emphasis, links, code or raw HTML from a
    kernel's message, and no | breaking a table row."""
    return _SPECIAL.sub(r"\\\1", " ".join(text.split())).replace("<", "&lt;")


def _code(text: str) -> str:
    """A code span that holds any text: a fence longer than any run of backticks in it."""
    text = " ".join(text.split()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
