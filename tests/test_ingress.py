"""The reference kernel's ingress (ADR 0077 Context: "a resume payload cannot be rejected
retroactively. Once appended it is a permanent fold input."): whatever a caller sends, an
operation returns an Outcome, a refusal is typed and appends nothing, and no input, once
accepted, makes an execution unreadable. Both stores: SQLite is where text that is not UTF-8
(a lone surrogate) is refused by the file itself."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from loomcheck.contract.driver import Outcome
from loomcheck.corpora.view_digests import nest
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import Event, copy_json
from loomcheck.reference.fold import fold
from loomcheck.spec.vocabulary import refusals

JSON = Any
ERRORS = {r.reason: r.error for r in refusals().refusal}
GATE = {"body": [{"op": "suspend", "on": "go"}, {"op": "observe"}, {"op": "complete", "output": "done"}]}
STORES = ("memory", "sqlite")
# Everything that is not storable text, where an id or a type is due.
NOT_TEXT: tuple[JSON, ...] = (None, 5, 1.5, True, [], ["go"], {}, {"go": 1}, "\ud800", "go\udfff")


@pytest.fixture(params=STORES)
def driver(request: pytest.FixtureRequest) -> Iterator[ReferenceDriver]:
    kernel = ReferenceDriver(store=request.param)
    kernel.define_flow("f", GATE)
    kernel.define_flow("g", GATE)
    try:
        yield kernel
    finally:
        kernel.close()


def assert_data(outcome: object) -> Outcome:
    """A refusal is data: a typed error with a catalogued reason, its catalogued error type."""
    assert isinstance(outcome, Outcome), outcome
    if not outcome.ok:
        assert outcome.reason in ERRORS, outcome
        assert outcome.error == ERRORS[outcome.reason], outcome
    return outcome


def still_works(driver: ReferenceDriver, execution: str) -> None:
    """The execution reads, and every operation on it answers with an Outcome."""
    driver.read_log(execution)
    driver.read_state(execution)
    assert_data(driver.recover(execution))
    assert_data(driver.resume(execution, "go", {"ok": True}))
    driver.read_state(execution)


@pytest.mark.parametrize("where", ["start", "resume"])
@pytest.mark.parametrize(("kind", "levels"), [("array", 700), ("object", 700), ("array", 5_000)])
def test_a_deep_value_never_leaves_an_execution_unreadable(driver: ReferenceDriver, where: str, kind: str,
                                                           levels: int) -> None:
    """Refused (typed, nothing appended), or accepted and readable: the two outcomes a kernel may
    have; a payload nested past what a recursive walk survives was appended, then broke every
    later read_state, resume and recover of the execution."""
    value = nest(kind, levels, 0)
    if where == "resume":
        assert driver.start("x", "f", None).ok
    before = driver.read_log("x")
    outcome = assert_data(driver.start("x", "f", value) if where == "start" else driver.resume("x", "go", value))
    if not outcome.ok:
        assert driver.read_log("x") == before
    still_works(driver, "x")


def test_the_reference_fold_copies_any_depth() -> None:
    """fold(events) of a log another kernel wrote: the fold's copies are no recursion, so a
    payload nested 20 000 deep folds (and copy_json copies it) where a stack would overflow."""
    deep = nest("object", 20_000, "leaf")
    state = fold([Event("x", 1, "EXECUTION_STARTED", {"flowId": "f", "input": deep})])
    copied, node = state.variables["_input"], deep
    for _ in range(20_000):
        assert copied is not node and set(copied) == {"a"}
        copied, node = copied["a"], node["a"]
    assert copied == "leaf"
    assert copy_json([deep])[0] is not deep


Call = Callable[[ReferenceDriver, JSON], object]
# Every id and type argument of every operation (execution "x" is parked on "go").
ARGUMENTS: dict[str, Call] = {
    "define flow id": lambda d, bad: d.define_flow(bad, GATE),
    "start execution id": lambda d, bad: d.start(bad, "f", None),
    "start flow id": lambda d, bad: d.start("y", bad, None),
    "resume execution id": lambda d, bad: d.resume(bad, "go", None),
    "resume type": lambda d, bad: d.resume("x", bad, None),
    "resume options": lambda d, bad: d.resume("x", "go", None, bad),
    "recover execution id": lambda d, bad: d.recover(bad),
    "resume-as execution id": lambda d, bad: d.resume_as(bad, "g", "go", None),
    "resume-as flow id": lambda d, bad: d.resume_as("x", bad, "go", None),
    "resume-as type": lambda d, bad: d.resume_as("x", "g", bad, None),
    "resume-as options": lambda d, bad: d.resume_as("x", "g", "go", None, bad),
    "resume-as transform": lambda d, bad: d.resume_as("x", "g", "go", None, {"transformState": bad}),
    "resume-as transform value": lambda d, bad: d.resume_as("x", "g", "go", None, {
        "transformState": {"name": "default", "field": "added", "value": bad}}),
    "truncate execution id": lambda d, bad: d.truncate_prefix(bad, 1),
    "truncate upto": lambda d, bad: d.truncate_prefix("x", bad),
    "load execution id": lambda d, bad: d.load(bad, [{"seq": 1, "type": "EXECUTION_STARTED", "payload": {}}], None),
    "load events": lambda d, bad: d.load("y", bad, None),
    "load event type": lambda d, bad: d.load("y", [{"seq": 1, "type": bad, "payload": {}}], None),
    "load snapshot": lambda d, bad: d.load("y", [], bad),
    "append execution id": lambda d, bad: d.append_events(bad, [{"type": "app.note", "payload": 1}]),
    "append events": lambda d, bad: d.append_events("x", bad),
    "append event type": lambda d, bad: d.append_events("x", [{"type": bad, "payload": 1}]),
}


@pytest.mark.parametrize("argument", list(ARGUMENTS))
def test_every_argument_that_is_not_text_is_refused_typed(driver: ReferenceDriver, argument: str) -> None:
    """Non-string, null, numbers, lists, objects and lone surrogates wherever an id, a type or a
    structured argument is due: each an Outcome, a refusal typed and appending nothing (a
    resumeAs of an unparked execution used to record EXECUTION_MIGRATED, then fail on the type)."""
    for crashed in (False, True):
        driver.reset()
        driver.define_flow("f", GATE)
        driver.define_flow("g", GATE)
        assert driver.start("x", "f", None).ok
        if crashed:
            assert driver.resume("x", "go", None).ok  # completed: resumeAs records its type as given
        for bad in NOT_TEXT:
            before = driver.read_log("x")
            outcome = assert_data(ARGUMENTS[argument](driver, bad))
            if not outcome.ok:
                assert driver.read_log("x") == before, (argument, bad)
            assert driver.read_state("y")["sequence"] >= 0


NOT_STORABLE: tuple[JSON, ...] = (float("nan"), float("inf"), {"a": [float("-inf")]}, {"\ud800": 1}, {"a": "x\udfff"},
                                  {1: "int key"}, {"a": object()}, "x" * (1 << 20), ["é" * (1 << 19)])


@pytest.mark.parametrize("where", ["start", "resume", "resume-as"])
def test_a_value_no_store_holds_or_past_the_size_bound_is_refused(driver: ReferenceDriver, where: str) -> None:
    """NaN, infinities, lone surrogates in keys and strings (SQLite cannot write them), int keys,
    objects, and a value whose JSON text is a byte past the reference's 1 MiB: typed, nothing appended."""
    assert driver.start("x", "f", None).ok
    for value in NOT_STORABLE:
        before = driver.read_log("x")
        outcome = assert_data({"start": lambda: driver.start("y", "f", value),
                               "resume": lambda: driver.resume("x", "go", value),
                               "resume-as": lambda: driver.resume_as("x", "g", "go", value)}[where]())
        assert not outcome.ok, value
        assert driver.read_log("x") == before and driver.read_log("y") == []


@pytest.mark.parametrize("bad", NOT_TEXT)
def test_reads_of_an_id_no_execution_can_have_are_empty(driver: ReferenceDriver, bad: JSON) -> None:
    assert driver.read_log(bad) == []
    assert driver.read_state(bad)["sequence"] == 0
    assert driver.effects(bad) == []
    assert driver.parked_at_sequence(bad) is None
    driver.erase(bad)


@pytest.mark.parametrize("config", [
    None, 5, [], {"authenticator": 5}, {"authenticator": {"gates": 5, "keys": {"alice": "k" * 16}}},
    {"authenticator": {"gates": ["go"], "keys": 5}}, {"authenticator": {"gates": ["go"], "keys": {"alice": None}}},
    {"authenticator": {"gates": ["go"], "keys": {"alice": []}}}, {"authenticator": {"gates": [5], "keys": {}}},
    {"strict": "yes"}, {"authenticator": {"gates": ["go"], "keys": {"alice": "k" * 16}, "requireActor": "no"}},
])
def test_a_malformed_configure_is_refused_and_changes_nothing(driver: ReferenceDriver, config: JSON) -> None:
    assert driver.start("x", "f", None).ok
    outcome = assert_data(driver.configure(config))
    assert not outcome.ok and outcome.error == "ConfigError", outcome
    assert driver.resume("x", "go", {"ok": True}).ok, "the previous (permissive) configuration still holds"


# --------------------------------------------------------------------------- the corpus other kernels get


@pytest.mark.parametrize("store", STORES)
def test_the_hostile_payloads_corpus_passes_on_the_reference(store: str) -> None:
    from loomcheck.fuzz.hostile import payloads
    from loomcheck.contract.session import Session, hello_of
    from loomcheck.corpora.hostile_payloads import run_hostile_payloads

    kernel = ReferenceDriver(store=store)
    try:
        result = run_hostile_payloads(Session(kernel, frozenset(hello_of(kernel).features)))
    finally:
        kernel.close()
    assert result.cases == 2 * len(payloads()) and result.violations == [], result.violations[:2]


def test_a_counterexample_holding_a_payload_20000_deep_is_written_and_read_back(tmp_path) -> None:
    """A start's input and a resume's payload are kept as given at any depth (pydantic's JsonValue
    stops near 255 levels, json's recursion near 5000 here), and written on one line (indenting would
    grow with the square of the depth)."""
    from loomcheck.spec.regressions import RegressionLog, dump_regression, load_regression

    deep = nest("array", 20_000, "leaf")
    log = RegressionLog.model_validate({
        "name": "deep", "description": "d", "adr": "0077", "invariants": ["log.stays-readable"],
        "origin": "counterexample", "operations": [
            {"op": "define", "flow": "f", "program": GATE}, {"op": "start", "execution": "x", "flow": "f", "input": deep},
            {"op": "resume", "execution": "x", "type": "go", "payload": {"deep": deep}}]})
    path = tmp_path / "deep.json"
    path.write_text(dump_regression(log), encoding="utf-8")
    assert len(path.read_text(encoding="utf-8").splitlines()) == 1
    back = load_regression(path)
    node = back.operations[1].input
    for _ in range(20_000):
        (node,) = node
    assert node == "leaf" and dump_regression(back) == dump_regression(log)


# --------------------------------------------------------------------------- the campaign (bench/hostile_inputs.py)


def test_a_hostile_campaign_of_2000_operations_on_sqlite_finds_nothing(tmp_path, capsys) -> None:
    """Starts and resumes (and some resumeAs, recoveries, configurations) with hostile arguments:
    every refusal typed and leaving the file as it was, every acceptance readable and foldable.
    The 110 000-operation run is `python -m loomcheck.bench.hostile_inputs`, this one its command."""
    import json

    from loomcheck.bench.hostile_inputs import main

    assert main(["-n", "2000", "--seed", "20240", "--json", str(tmp_path / "tally.json")]) == 0
    assert "crashes                   0" in capsys.readouterr().out
    tally = json.loads((tmp_path / "tally.json").read_text())
    assert (tally["mistaken_appends"], tally["crashes"], tally["untyped"], tally["unreadable"]) == (0, 0, 0, 0)
    assert tally["kinds"]["start"] + tally["kinds"]["resume"] > 1700 and tally["accepted"] > 200
    assert {"payload-too-large", "input-too-large", "invalid-payload", "invalid-input", "gate-mismatch",
            "kernel-namespace", "unknown-execution", "view-digest-mismatch", "invalid-config"} <= set(tally["refused"])


def test_the_campaign_counts_what_a_broken_kernel_does() -> None:
    """The campaign's judgement can fail: a refusal that appends (the appending_refusal mutant), and a
    kernel that takes any depth into a store that keeps no more than 136 levels (deep_poison's
    runtime), which raises instead of answering."""
    from loomcheck.bench.hostile_inputs import run
    from mutants.appending_refusal import AppendingRefusalRuntime
    from mutants.deep_poison import RECURSIVE_HANDLERS, UnboundedRuntime

    appending = run(150, seed=3, kernel=lambda: ReferenceDriver(store="sqlite", runtime_class=AppendingRefusalRuntime))
    assert appending.mistaken_appends > 0 and not appending.clean
    unbounded = run(150, seed=3, kernel=lambda: ReferenceDriver(store="sqlite", runtime_class=UnboundedRuntime,
                                                                  handlers=RECURSIVE_HANDLERS))
    assert unbounded.crashes > 0, unbounded.problems
