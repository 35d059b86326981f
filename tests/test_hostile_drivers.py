"""In-process subjects can never make the harness lie: whatever a Python driver raises
(SystemExit, GeneratorExit, KeyboardInterrupt, a BaseException of its own, an exception
that cannot be printed) and whatever it returns (a value that contains itself, one nested
2,000 deep) is the implementation's finding in a valid report, and what the harness hands
it is a copy (tests/fakes/hostile.py). Only the user's SIGINT or SIGTERM interrupts a run:
at any moment, it leaves a valid partial report and exit 2."""

from __future__ import annotations

import enum
import json
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from loomcheck.cli import main
from loomcheck.run import runner, search_phases
from loomcheck.contract.needs import operations_need
from loomcheck.contract.script import from_model
from loomcheck.contract.jsondata import BOUNDS, ENVELOPE, MAX_DEPTH, Bounds, NotJsonData, handed, plain
from loomcheck.contract.shown import brief, shown_exception
from loomcheck.bench import signals
from loomcheck.reports.model import Report
from loomcheck.reports.placeholder import from_argv, minimal_report
from loomcheck.spec.regressions import committed_regressions
from fakes.hostile import UnprintableError
from interrupting import interrupt, running

HOSTILE = Path(__file__).parent / "fakes" / "hostile.py"
ONLY = "log.append-only"  # judged by the state machine, the explorer and the regression logs


@dataclass(frozen=True)
class Case:
    factory: str
    code: int            # the exit status
    finding: str | None  # a text of the implementation-error finding; None: no finding at all
    reason: str | None = None


CASES = [
    # A factory that cannot make a driver is a tool error (exit 3), whatever it raises, as RuntimeError is.
    Case("factory_exits", 3, "the factory raised SystemExit: 0"),
    Case("hello_escapes", 2, "hello: raised Escape: hello, and goodbye"),
    Case("start_exits", 2, "raised SystemExit: 0"),
    Case("read_state_generator_exit", 2, "raised GeneratorExit"),
    Case("resume_escapes", 2, "raised Escape: not an Exception"),
    Case("define_interrupts", 2, "raised KeyboardInterrupt"),
    Case("start_unprintable", 2, "raised <UnprintableError whose str() raised ValueError>"),
    Case("close_exits", 2, "close: raised SystemExit: 3"),
    Case("mutating_fold", 0, None),  # handed a copy: its scribbles are its own, and its fold is right
    Case("self_referential_log", 2, "contains itself", "invalid-message"),
    Case("deep_state", 2, "nested deeper than", "invalid-message"),
]


def run_in_process(tmp_path: Path, factory: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Report, str]:
    try:
        code = main(["run", "--impl", f"python:{HOSTILE}:{factory}", "--only", ONLY, "--profile", "peers-slow",
                     "--report", str(tmp_path)])
    except BaseException as escaped:  # noqa: BLE001 - what the harness let through is the failure under test
        pytest.fail(f"{type(escaped).__name__} escaped `loomcheck run`: {escaped!r}")
    out = capsys.readouterr().out
    return code, Report.model_validate_json((tmp_path / "report.json").read_text(encoding="utf-8")), out


@pytest.mark.parametrize("case", CASES, ids=[c.factory for c in CASES])
def test_a_hostile_driver_is_the_implementations_finding(case: Case, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, report, out = run_in_process(tmp_path, case.factory, capsys)
    assert code == case.code, out
    assert "Traceback" not in out
    assert report.stopped != "interrupted"  # the driver's KeyboardInterrupt is no user's Ctrl-C
    assert not [f for f in report.findings if f.kind == "suite-error"], report.findings
    errors = [f for f in report.findings if f.kind == "implementation-error"]
    if case.finding is None:
        assert report.complete and not report.findings and {r.status for r in report.results} == {"pass"}, report
        return
    assert any(case.finding in f.message for f in errors), [f.message for f in errors]
    if case.reason is not None:
        assert any(f.reason == case.reason for f in errors if case.finding in f.message), errors
    # No invariant passes on a check that never ran: a pass was judged by some example.
    assert all(r.examples > 0 for r in report.results if r.status == "pass"), report.results


def test_a_kernel_module_that_exits_on_import_is_a_tool_error(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "exits.py"
    module.write_text("raise SystemExit(0)\n")
    try:
        code = main(["run", "--impl", f"python:{module}:make", "--only", ONLY, "--report", str(tmp_path / "r")])
    except BaseException as escaped:  # noqa: BLE001
        pytest.fail(f"{type(escaped).__name__} escaped `loomcheck run`: {escaped!r}")
    out = capsys.readouterr().out
    assert code == 3 and "raised SystemExit: 0" in " ".join(out.split()), out


def test_a_phase_a_defect_of_the_suite_stopped_passes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The explorer breaks (a defect of the suite, not of the kernel): the invariants it had to judge
    are in error, not passed on the state machine's say-so, and the run is not complete."""
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a defect of the suite")

    monkeypatch.setattr(search_phases, "explore", broken)  # the explorer phase calls it
    code = main(["run", "--impl", "reference:memory", "--only", ONLY, "--profile", "peers-slow", "--report",
                 str(tmp_path)])
    report = Report.model_validate_json((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert code == 2, capsys.readouterr().out
    assert [f.message for f in report.findings if f.kind == "suite-error"] == ["explorer: RuntimeError: a defect of the suite"]
    [record] = report.results
    assert record.status == "error" and "explorer phase stopped" in (record.message or ""), record
    assert report.complete is False


def test_a_driver_that_installs_its_own_signal_handler_finds_the_runs_back(tmp_path: Path) -> None:
    from fakes.hostile import TakesTheSignals

    TakesTheSignals.seen.clear()
    code = main(["run", "--impl", "python:fakes.hostile:takes_the_signals", "--only", ONLY, "--profile", "peers-slow",
                 "--explore-depth", "0", "--report", str(tmp_path)])
    assert code == 0 and TakesTheSignals.seen and not any(TakesTheSignals.seen)


def test_an_embedding_caller_on_another_thread_runs_and_keeps_its_signal_handling(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(main(["run", "--impl", "reference:memory", "--only",
                                                                  ONLY, "--profile", "peers-slow", "--explore-depth",
                                                                  "0", "--report", str(tmp_path)])))
    worker.start()
    worker.join(timeout=120)
    assert codes == [0]
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


# -- what crosses the boundary: JSON data, copied ----------------------------------------------
class Hostile(enum.StrEnum):
    A = "a"

    def __str__(self) -> str:
        raise AssertionError("a method of the answer was called")


class HostileList(list):
    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("a method of the answer was called")


def nested(levels: int) -> object:
    value: object = 0
    for _ in range(levels):
        value = [value]
    return value


def self_containing() -> object:
    value: list[object] = [1]
    value.append({"again": value})
    return value


@pytest.mark.parametrize("answer,problem", [
    (float("nan"), "nan is not a JSON number"),
    ({"x": [float("inf")]}, "inf is not a JSON number at /x/0"),
    ({1: "one"}, "a member name of type int"),
    ({"b": b"bytes"}, "a value of type bytes is not JSON data at /b"),
    ((1, 2), "a value of type tuple"),
    (10 ** 4000, "an integer of more than"),
    (self_containing(), "the value contains itself at /1/again"),
    (nested(MAX_DEPTH + 1), f"nested deeper than {MAX_DEPTH} arrays/objects"),
], ids=["nan", "inf", "int-key", "bytes", "tuple", "huge-int", "cycle", "too-deep"])
def test_an_answer_that_is_not_json_data_is_refused_with_where(answer: object, problem: str) -> None:
    with pytest.raises(NotJsonData) as refused:
        plain(answer)
    assert problem in str(refused.value)


def test_json_data_is_copied_through_base_types_and_bounded_in_size() -> None:
    answer = {"kind": Hostile.A, "items": HostileList([1, 2.5, True, None]), "deep": nested(MAX_DEPTH - 1)}
    copy = plain(answer)
    assert copy["kind"] == "a" and type(copy["kind"]) is str and type(copy["items"]) is list
    assert copy["items"] == [1, 2.5, True, None] and levels(copy["deep"]) == MAX_DEPTH - 1
    with pytest.raises(NotJsonData, match="more than 10 values"):
        plain(list(range(20)), Bounds(items=10))
    with pytest.raises(NotJsonData, match="more than 5 characters"):
        plain(["abc", "def"], Bounds(text=5))


def levels(value: object) -> int:
    count = 0
    while isinstance(value, list):
        value, count = value[0], count + 1
    return count


def innermost(value: object) -> list[object]:
    while isinstance(value, list) and isinstance(value[0], list):
        value = value[0]
    return value  # type: ignore[return-value]


def test_what_is_handed_shares_nothing_at_any_depth() -> None:
    original = {"a": [{"b": 1}], "view": nested(100_000)}  # the bound-answers corpus nests views so deep
    copy, depth = handed(original)
    copy["a"][0]["b"] = 2
    innermost(copy["view"])[0] = "changed"
    assert original["a"][0]["b"] == 1 and innermost(original["view"]) == [0] and depth == 100_001


def test_an_answer_may_nest_as_deep_as_what_the_implementation_was_handed() -> None:
    """The hostile-payloads corpus sends an input 5 000 deep: a kernel that keeps it answers with it."""
    _, depth = handed({"input": nested(5_000)})
    kept = {"seq": 1, "type": "EXECUTION_STARTED", "payload": {"input": nested(5_000)}}
    assert levels(plain([kept], BOUNDS.beyond(depth))[0]["payload"]["input"]) == 5_000
    with pytest.raises(NotJsonData, match=f"nested deeper than {depth + ENVELOPE}"):
        plain(nested(depth + ENVELOPE + 1), BOUNDS.beyond(depth))
    assert BOUNDS.beyond(3) is BOUNDS  # a shallow value moves nothing


def test_text_about_an_exception_or_a_value_never_raises() -> None:
    class Odd(Exception):
        def __str__(self):  # type: ignore[no-untyped-def]
            return 42

    assert shown_exception(Odd()) == "<Odd whose str() raised TypeError>"
    assert shown_exception(UnprintableError()) == "<UnprintableError whose str() raised ValueError>"
    assert shown_exception(SystemExit(0)) == "SystemExit: 0" and shown_exception(GeneratorExit()) == "GeneratorExit"
    assert shown_exception(ValueError("x" * 5000)).endswith("(4000 more characters)")
    assert brief(self_containing(), 40).endswith("...") and len(brief(self_containing(), 40)) == 40
    assert brief(nested(5000), 20) == "[[[[[[[[[[[[[[[[[..."


def test_the_placeholder_report_is_valid_and_a_refused_run_leaves_what_was_there(tmp_path: Path) -> None:
    schema = json.loads((Path(runner.__file__).parents[1] / "spec" / "schemas" / "report.schema.json").read_text())
    Draft202012Validator(schema).validate(minimal_report("reference", "ci", "interrupted"))
    earlier = tmp_path / "report.json"
    earlier.write_text("an earlier run's report")
    early = from_argv(["run", "--only", "gate.", "--report", str(tmp_path)])
    assert early is not None
    written = Report.model_validate_json(earlier.read_text())
    assert (written.complete, written.implementation.spec) == (False, "reference")
    early.withdraw()
    assert earlier.read_text() == "an earlier run's report"
    assert from_argv(["replay", "x.json"]) is None


# -- the user's signals ----------------------------------------------------------------------
# (signal, a moment after loomcheck's handlers are installed, drawn in this band of seconds): two
# in the first half second (the imports, the catalogue, the factory), two in the state machine.
# The handlers are the first thing `python -m loomcheck` does; before that the interpreter is
# still starting (site, an editable install's import hook) and Python's defaults hold.
MOMENTS = [(signal.SIGINT, (0.05, 0.25)), (signal.SIGTERM, (0.25, 0.5)), (signal.SIGINT, (1.0, 1.8)),
           (signal.SIGTERM, (1.0, 1.8))]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads SigCgt from /proc")
@pytest.mark.parametrize("signum,band", MOMENTS, ids=[f"{signal.Signals(s).name}-{a}-{b}s" for s, (a, b) in MOMENTS])
def test_a_signal_at_any_moment_leaves_a_partial_report_and_exit_2(signum: int, band: tuple[float, float],
                                                                   tmp_path: Path) -> None:
    delay = random.uniform(*band)
    report = tmp_path / "report"
    with running([sys.executable, *signals.COMMAND, "--report", str(report)], cwd=tmp_path) as harness:
        deadline = time.monotonic() + 30
        while (not signals.handler_installed(harness.pid) and harness.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.002)
        assert harness.poll() is None, "the run ended before it was signalled"
        time.sleep(delay)
        assert harness.poll() is None, f"the run ended within {delay:.2f} s: choose a longer one"
        interrupt(harness, signum, report, timeout=60, context=f"{delay:.2f} s: ")


def test_replay_of_a_hostile_driver_neither_exits_with_its_status_nor_prints_a_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    log = next(label for label, found in committed_regressions() if not operations_need(
        [from_model(m) for m in found.operations]) - {"fold", "recover", "resume-as", "restart"})
    for factory, code, said in (("factory_exits", 3, "the factory raised SystemExit: 0"),
                                ("start_exits", 2, "raised SystemExit: 0"),
                                ("close_exits", 0, "close: raised SystemExit: 3")):
        try:
            returned = main(["replay", str(log), "--impl", f"python:{HOSTILE}:{factory}"])
        except BaseException as escaped:  # noqa: BLE001
            pytest.fail(f"{factory}: {type(escaped).__name__} escaped `loomcheck replay`: {escaped!r}")
        out = " ".join(capsys.readouterr().out.split())
        assert (returned, said in out, "Traceback" in out) == (code, True, False), (factory, out)
