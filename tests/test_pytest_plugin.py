"""The pytest plugin as a kernel's own test run meets it: items collected from
loomcheck.toml, one per invariant, each passing, failing, skipping or
xfailing as the report says, and `conformance()` for plain tests. Every
pytester run selects a few invariants, so each takes seconds."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from loomcheck.run.runner import Run
from loomcheck.properties.checks import all_predicates
from loomcheck.pytest_plugin import conformance

pytest_plugins = ["pytester"]

# pytester's in-process runs forget the modules each of them imported, while the predicate
# registry survives if this process had loaded it: a predicate module imported again would
# register its predicates twice. Loaded here once, the runner and every predicate stay put.
assert Run and all_predicates()

PLUGIN = ("-p", "loomcheck.pytest_plugin")
TESTS = Path(__file__).parent  # holds the seeded mutants (tests/mutants)

# A kernel that declares no optional driver feature: every invariant that needs one is not applicable.
PLAIN_KERNEL = textwrap.dedent('''
    from loomcheck.contract.driver import Hello
    from loomcheck.reference.driver import ReferenceDriver

    class PlainKernel(ReferenceDriver):
        def hello(self):
            return Hello(name="plain-kernel", version="0.0.1", eventSchema=super().hello().eventSchema, features=[])

    def make():
        return PlainKernel(store="memory")
''')


def test_reference_passes_the_selected_items(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", loomcheck="")
    result = pytester.runpytest(*PLUGIN, "--loomcheck-impl", "reference:memory", "--loomcheck-only", "gate.", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*loomcheck.toml::gate.i-receives-entry-i PASSED*",
                                 "*loomcheck-reference * 4 passed, 0 failed*"])


def test_a_mutant_fails_the_invariant_it_breaks(pytester: pytest.Pytester) -> None:
    """tests/mutants/any_gate.py lets any event name answer the parked gate: resume.gate-mismatch
    (tests/mutants/__init__.py, CATCHES). The documented hazard is skipped, never passed."""
    pytester.syspathinsert(TESTS)
    pytester.makefile(".toml", loomcheck="")
    result = pytester.runpytest(*PLUGIN, "--loomcheck-impl", "python:mutants.any_gate:make",
                                "--loomcheck-only", "resume.gate-mismatch", "hazard.mixed-parallel", "-rs")
    result.assert_outcomes(failed=1, skipped=1)
    # The whole explanation, as `loomcheck run` prints it: the cited events with their roles, what
    # the decision requires, and the decision's words.
    result.stdout.fnmatch_lines([
        "*_ loomcheck resume.gate-mismatch _*",
        "resume.gate-mismatch (ADR 0104 D1): An answer names the parked gate",
        "violated by *: *gate-mismatch*",
        "  #* the last event before the resume, after which the execution was parked on *",
        "  What ADR 0104 D1 requires instead: ResumeRefusedError gate-mismatch: *",
        '  ADR 0104 D1: "*"',
        "counterexample (* operations, * events): *resume.gate-mismatch.json",
        "replay: *loomcheck replay *resume.gate-mismatch.json --impl python:mutants.any_gate:make",
    ])
    result.stdout.fnmatch_lines(["SKIPPED ?1? loomcheck.toml:1: documented hazard, hazard: *"])
    assert "Traceback" not in result.stdout.str()


def test_settings_from_loomcheck_toml_and_not_applicable_skips(pytester: pytest.Pytester) -> None:
    pytester.mkdir("kernel")
    (pytester.path / "kernel" / "plain.py").write_text(PLAIN_KERNEL, encoding="utf-8")
    pytester.makefile(".toml", loomcheck='impl = "python:kernel/plain.py:make"\n'
                                         'only = ["hazard.mixed-parallel"]\nreport = "out"\n')
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not applicable: needs driver feature(s) human-steps, parallel, which plain-kernel*"])
    assert (pytester.path / "out" / "report.json").is_file()  # `report` is relative to loomcheck.toml


def test_manifest_expectations_become_xfail_and_xpass(pytester: pytest.Pytester) -> None:
    """tests/mutants/validating_load.py re-parses answers on load: it fails
    typed.rehydration-not-validated and passes typed.sharp-edge."""
    pytester.syspathinsert(TESTS)
    pytester.makefile(".toml", loomcheck="")
    manifest = pytester.makefile(".toml", manifest=textwrap.dedent('''
        [[expected]]
        invariant = "typed.rehydration-not-validated"
        status = "fail"
        reason = "load re-parses answers"

        [[expected]]
        invariant = "typed.sharp-edge"
        status = "fail"
        reason = "a stale entry"
    '''))
    result = pytester.runpytest(*PLUGIN, "--loomcheck-impl", "python:mutants.validating_load:make",
                                "--loomcheck-only", "typed.rehydration-not-validated", "typed.sharp-edge",
                                "--loomcheck-manifest", str(manifest), "-rxX")
    result.assert_outcomes(xfailed=1, xpassed=1)
    result.stdout.fnmatch_lines(["XFAIL*typed.rehydration-not-validated*load re-parses answers*",
                                 "XPASS*typed.sharp-edge*a stale entry*"])


def test_nothing_is_collected_without_an_implementation(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", loomcheck="")
    result = pytester.runpytest(*PLUGIN)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_impl_without_loomcheck_toml_warns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unit="def test_one():\n    pass\n")
    result = pytester.runpytest(*PLUGIN, "--loomcheck-impl", "reference:memory")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*no loomcheck.toml was collected*"])


@pytest.mark.parametrize(("options", "message"), [
    (["--loomcheck-impl", "kernel:make"], "*--loomcheck-impl*expected*"),
    (["--loomcheck-only", "no-such.id"], "*--loomcheck-only 'no-such.id' matches no invariant*"),
    (["--loomcheck-profile", "fast"], "*--loomcheck-profile 'fast': choose one of ci, dev, campaign*"),
])
def test_bad_options_are_usage_errors(pytester: pytest.Pytester, options: list[str], message: str) -> None:
    result = pytester.runpytest(*PLUGIN, *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_typo_in_loomcheck_toml_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", loomcheck='implementation = "reference:memory"\n')
    result = pytester.runpytest(*PLUGIN)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*loomcheck.toml: implementation: Extra inputs are not permitted*"])


def test_conformance_runs_once_per_implementation(tmp_path: Path) -> None:
    report = conformance("reference:memory", only=["typed.sharp-edge"], report_dir=tmp_path)
    assert [(r.id, r.status) for r in report.results] == [("typed.sharp-edge", "pass")]
    assert (tmp_path / "report.json").is_file()
    assert conformance("reference:memory", only=["typed.sharp-edge"]) is report
    with pytest.raises(ValueError, match="choose one of"):
        conformance("reference:memory", profile="fast")


def test_an_implementation_that_cannot_start_errors_every_item(pytester: pytest.Pytester) -> None:
    (pytester.path / "broken.py").write_text("def make():\n    raise RuntimeError('no database')\n", encoding="utf-8")
    pytester.makefile(".toml", loomcheck='impl = "python:broken.py:make"\nonly = ["gate.i-receives-entry-i", "typed.sharp-edge"]\n')
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*ERROR at setup of loomcheck gate.i-receives-entry-i*",
                                 "*implementation-error: *the factory raised RuntimeError: no database*"])


def test_enabled_from_conftest_as_the_docs_say(pytester: pytest.Pytester) -> None:
    """pytest_plugins in the top-level conftest.py, which may also import conformance: no warning."""
    pytester.makeconftest('from loomcheck.pytest_plugin import conformance\n'
                          'pytest_plugins = ["loomcheck.pytest_plugin"]\n')
    pytester.makefile(".toml", loomcheck='impl = "reference:memory"\nonly = ["typed.sharp-edge"]\n')
    result = pytester.runpytest("-m", "loomcheck")
    result.assert_outcomes(passed=1, warnings=0)


def test_manifest_unsupported_features_make_items_not_applicable(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", loomcheck='impl = "reference:memory"\nonly = ["typed.sharp-edge"]\nmanifest = "manifest.toml"\n')
    pytester.makefile(".toml", manifest='[features]\nunsupported = ["resume-schemas"]\nreason = "not yet"\n')
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not applicable: *resume-schemas*"])


def _junit_times(path: Path) -> dict[str, float]:
    return {case.get("name", ""): float(case.get("time", "0")) for case in ElementTree.parse(path).iter("testcase")}


def test_junit_gives_each_item_its_own_duration(pytester: pytest.Pytester) -> None:
    """The run happens in the first item's setup; its time is shared out by what each invariant's
    checks took, so the first item is not charged the whole run."""
    pytester.makefile(".toml", loomcheck="")
    result = pytester.runpytest(*PLUGIN, "--loomcheck-impl", "reference:memory", "--loomcheck-only", "gate.",
                                "--junitxml", "junit.xml")
    result.assert_outcomes(passed=4)
    times = _junit_times(pytester.path / "junit.xml")
    assert len(times) == 4 and all(seconds > 0 for seconds in times.values()), times
    first = next(iter(times.values()))
    assert first < 0.6 * sum(times.values()), times  # charged the whole run, it would be all of it


def test_x_stops_the_run_at_the_first_failing_invariant(pytester: pytest.Pytester) -> None:
    """With -x the catalogue's run stops once an invariant fails (here after the state machine,
    before the explorer): the item fails with its explanation, the items before it that the run
    left unjudged are skipped saying so, and pytest stops."""
    pytester.syspathinsert(TESTS)
    pytester.makefile(".toml", loomcheck='report = "out"\n')
    result = pytester.runpytest(*PLUGIN, "--loomcheck-impl", "python:mutants.any_gate:make",
                                "--loomcheck-only", "resume.", "-x", "-rs")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*not run: loomcheck stopped after 1 failing invariant, as asked (pytest -x or --maxfail)",
                                 "*stopping after 1 failures*"])
    report = json.loads((pytester.path / "out" / "report.json").read_text())
    assert report["complete"] is False and report["stopped"].startswith("stopped after 1 failing invariant")
    assert report["exploration"] == []  # the explorer never ran
    statuses = {r["id"]: r["status"] for r in report["results"]}
    assert list(statuses.values()).count("fail") == 1, statuses
