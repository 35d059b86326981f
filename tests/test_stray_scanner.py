"""ADR 0104 D2 and amendment R1a: the reference's stray scanner as a pure object (every
cut equals one pass, feeds are idempotent), its rules, and its agreement with the suite's
own oracle. spec/legacy-logs.md is the text these tests read."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loomcheck.corpora.legacy_scenarios import PAIR, START
from loomcheck.reference.events import Event
from loomcheck.reference.legacy import WarnMemory
from loomcheck.reference.scanner import StrayScanner, scan
from loomcheck.spec.names import IN_DOUBT_GATE, WARN_MEMORY

KINDS = {"a": "idempotent", "n": "non-idempotent", "h": "human", "k": "human"}.get

# ----------------------------------------------------------------- random logs

STEPS = st.sampled_from(["a", "n", "h", "k", "dyn"])  # "dyn": a step the definition cannot resolve
EVENT = st.one_of(
    st.tuples(st.just("EXECUTION_STARTED"), st.just({"flowId": "f", "input": None})),
    st.builds(lambda s: ("STEP_STARTED", {"stepId": s, "attempt": 1}), STEPS),
    st.builds(lambda s: ("STEP_COMPLETED", {"stepId": s, "output": None}), STEPS),
    st.builds(lambda on: ("EXECUTION_SUSPENDED", {"condition": {"on": on}}), st.sampled_from(["go1", "go2"])),
    st.builds(lambda s: ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput", "stepId": s}}), STEPS),
    st.builds(lambda s: ("EXECUTION_SUSPENDED", {"condition": {"on": IN_DOUBT_GATE, "stepId": s, "attempt": 1}}),
              STEPS),
    st.builds(lambda p: ("EXECUTION_RESUMED", p), st.sampled_from([{}, None, {"ok": True}, [1]])),
    st.just(("EXECUTION_RECOVERED", {})),
    st.sampled_from([("EXECUTION_COMPLETED", {"output": None}), ("EXECUTION_FAILED", {"error": {}}),
                     ("EXECUTION_CANCELLED", {})]),
    st.builds(lambda s, c: ("DECISION_RECORDED", {"decisionId": f"__loom_discard__:{s}", "choice": c,
                                                   "source": "operator"}), STEPS, st.integers(0, 2)),
    st.just(("go1", {"ok": True})),
)


def as_events(pairs: list[tuple[str, Any]], first: int = 1) -> list[Event]:
    return [Event("x", first + i, kind, payload) for i, (kind, payload) in enumerate(pairs)]


logs = st.lists(EVENT, max_size=24).map(as_events)


@settings(max_examples=300, deadline=None)
@given(log=logs, live=st.booleans())
def test_every_cut_equals_one_pass(log: list[Event], live: bool) -> None:
    """R1a: the single pass cut in two, at every position, reaches the full scan's verdict."""
    whole = scan(log, None, KINDS, live)
    for cut in range(len(log) + 1):
        scanner = StrayScanner()
        scanner.feed(log[:cut], KINDS)
        scanner.feed(log[cut:], KINDS)
        assert scanner.verdict(live) == whole, f"cut at {cut}"


@settings(max_examples=200, deadline=None)
@given(log=logs, pieces=st.lists(st.tuples(st.integers(0, 24), st.integers(0, 24)), max_size=6))
def test_repeated_and_overlapping_feeds_equal_one_feed(log: list[Event], pieces: list[tuple[int, int]]) -> None:
    """R1a: feed is idempotent, so two resumes sharing one scanner cannot double-count."""
    scanner = StrayScanner()
    for a, b in pieces:
        lo, hi = min(a, b), max(a, b)
        scanner.feed(log[:hi], KINDS)       # everything up to hi, again and again
        scanner.feed(log[lo:hi], KINDS)     # a window already consumed
    scanner.feed(log, KINDS)
    scanner.feed(log, KINDS)
    assert scanner.verdict() == scan(log, None, KINDS)


def test_a_gap_is_refused_not_folded() -> None:
    """R1a: a tail that does not continue what was consumed is the caller's cue to rescan."""
    scanner = StrayScanner()
    scanner.feed(as_events([("EXECUTION_STARTED", {})]), KINDS)
    try:
        scanner.feed(as_events([("EXECUTION_RESUMED", {})], first=3), KINDS)
    except Exception as exc:
        assert type(exc).__name__ == "NonContiguous"
    else:
        raise AssertionError("a non-contiguous tail was accepted")
    assert scanner.consumed == 1


# ----------------------------------------------------------------- the rules

def verdicts(pairs: list[tuple[str, Any]], live: bool = False) -> list[tuple[int, str, str]]:
    return [(c.index, c.why, c.verdict) for c in scan(as_events(pairs), None, KINDS, live).classified]


def test_the_four_verdicts() -> None:
    """D2: passed (a gate park follows), at-risk (none, live), harmless (ended), unverifiable (snapshot {})."""
    assert verdicts([START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}})]) == [
        (0, "recovery", "passed")]
    assert verdicts([START, *PAIR]) == [(0, "recovery", "at-risk")]
    assert verdicts([START, *PAIR, ("EXECUTION_COMPLETED", {})]) == [(0, "recovery", "harmless")]
    assert verdicts([START, *PAIR, ("EXECUTION_COMPLETED", {})], live=True) == [(0, "recovery", "at-risk")]
    tail = as_events([("STEP_STARTED", {"stepId": "a"})], first=8)
    snapshot = {"status": "running", "variables": {"_resumePayloads": [{}, {"ok": 1}]}}
    assert [(c.index, c.verdict) for c in scan(tail, snapshot, KINDS).classified] == [(0, "unverifiable")]
    proven = tail + as_events([("EXECUTION_SUSPENDED", {"condition": {"on": "go3"}})], first=9)
    assert scan(proven, snapshot, KINDS).classified == ()  # a gate park in the tail proves them spent
    pre_116 = {"status": "running", "variables": {"_resumePayload": {}}}  # ADR 0057's legacy snapshot
    assert [c.verdict for c in scan(tail, pre_116, KINDS).classified] == ["unverifiable"]


def test_every_stray_writer_is_named() -> None:
    """D2: a recovery, an in-doubt verdict, a resumeAs onto an unparked or a finished execution."""
    indoubt = ("EXECUTION_SUSPENDED", {"condition": {"on": IN_DOUBT_GATE, "stepId": "n", "attempt": 1}})
    assert verdicts([START, ("STEP_STARTED", {"stepId": "n"}), indoubt,
                     ("EXECUTION_RESUMED", {"stepId": "n", "resolution": "succeeded"})]) == [
        (0, "in-doubt-verdict", "at-risk")]
    assert verdicts([START, ("EXECUTION_MIGRATED", {}), ("go1", 1), ("EXECUTION_RESUMED", 1)]) == [
        (0, "unparked", "at-risk")]
    assert verdicts([START, ("EXECUTION_FAILED", {}), ("EXECUTION_MIGRATED", {}), ("go1", 1),
                     ("EXECUTION_RESUMED", 1)]) == [(0, "terminal", "at-risk")]
    # ADR 0104 D3: a null resume in those positions is status only, not an entry.
    assert verdicts([START, ("EXECUTION_RESUMED", None), indoubt, ("EXECUTION_RESUMED", None)]) == []


def test_a_human_park_proves_nothing() -> None:
    """D2: only a gate park proves the entries before it spent."""
    human = ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput", "stepId": "h"}})
    assert verdicts([START, ("STEP_STARTED", {"stepId": "h"}), ("STEP_STARTED", {"stepId": "a"}), *PAIR,
                     human]) == [(0, "recovery", "at-risk")]


def ambiguities(pairs: list[tuple[str, Any]], kinds: Any = KINDS) -> list[tuple[str, str]]:
    return [(a.step_id, a.shape) for a in scan(as_events(pairs), None, kinds).ambiguities]


def test_the_two_ambiguous_shapes_and_the_override() -> None:
    """D2: a pre-0104 re-park after an answer, and an unspent stray before a first start."""
    old_park = ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput"}})  # no stepId: pre-0104
    reparked = [START, ("STEP_STARTED", {"stepId": "h"}), old_park, ("HumanInput", 1), ("EXECUTION_RESUMED", 1),
                ("STEP_STARTED", {"stepId": "h"}), old_park]
    assert ambiguities(reparked) == [("h", "reparked-after-answer")]
    assert verdicts(reparked + [("HumanInput", 2), ("EXECUTION_RESUMED", 2)]) == [(1, "human-reanswer", "at-risk")]
    stray_first = [START, *PAIR, ("STEP_STARTED", {"stepId": "h"})]
    assert ambiguities(stray_first) == [("h", "stray-before-first-start")]
    spent = [START, *PAIR, ("EXECUTION_SUSPENDED", {"condition": {"on": "go2"}}), ("go2", 1),
             ("EXECUTION_RESUMED", 1), ("STEP_STARTED", {"stepId": "h"})]
    assert ambiguities(spent) == []
    override = ("DECISION_RECORDED", {"decisionId": "__loom_discard__:h", "choice": 0, "source": "operator"})
    assert ambiguities(stray_first + [override]) == []
    assert ambiguities(stray_first + [override, ("STEP_STARTED", {"stepId": "k"})]) == [
        ("k", "stray-before-first-start")]


def test_attribution_of_human_parks() -> None:
    """D2: by condition.stepId; else the STEP_STARTED right before, unless that step is known to
    be non-human; an unresolvable step is possibly human (fail closed)."""
    old_park = ("EXECUTION_SUSPENDED", {"condition": {"on": "g"}})
    after_gate_step = [START, ("STEP_STARTED", {"stepId": "a"}), old_park, ("g", 1), ("EXECUTION_RESUMED", 1),
                       ("STEP_STARTED", {"stepId": "a"}), old_park]
    assert ambiguities(after_gate_step) == []  # "a" is known idempotent: both are gate parks
    assert ambiguities([*after_gate_step[:1], ("STEP_STARTED", {"stepId": "dyn"}), old_park, ("g", 1),
                        ("EXECUTION_RESUMED", 1), ("STEP_STARTED", {"stepId": "dyn2"}), ("STEP_STARTED",
                        {"stepId": "dyn"}), old_park]) == [("dyn", "reparked-after-answer")]
    assert ambiguities([START, *PAIR, ("STEP_STARTED", {"stepId": "dyn"})]) == [("dyn", "stray-before-first-start")]


def test_two_human_steps_in_one_parallel_are_accepted() -> None:
    """D2: the 0104 log the first version of the rule (credit the newest open human step) refused."""
    log = [START, ("STEP_STARTED", {"stepId": "h"}), ("STEP_STARTED", {"stepId": "k"}),
           ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput", "stepId": "h"}}),
           ("HumanInput", 1), ("EXECUTION_RESUMED", 1), ("STEP_COMPLETED", {"stepId": "h", "output": 1}),
           ("EXECUTION_SUSPENDED", {"condition": {"on": "HumanInput", "stepId": "k"}})]
    assert ambiguities(log) == [] and verdicts(log) == []


def test_warn_memory_is_a_bounded_fifo() -> None:
    memory = WarnMemory()
    assert memory.first_time("e0", "at-risk") and not memory.first_time("e0", "at-risk")
    assert memory.first_time("e0", "passed")
    for i in range(WARN_MEMORY - 2):
        assert memory.first_time(f"e{i + 1}", "at-risk")
    assert len(memory) == WARN_MEMORY and not memory.first_time("e0", "at-risk")
    memory.first_time("new", "at-risk")
    assert len(memory) == WARN_MEMORY and memory.first_time("e0", "at-risk")  # the oldest was forgotten


# ----------------------------------------------------------------- two readings of one text

@settings(max_examples=400, deadline=None)
@given(log=logs, live=st.booleans(), held=st.lists(st.sampled_from([{}, {"ok": 1}, None]), max_size=3),
       status=st.sampled_from(["running", "suspended", "completed"]))
def test_the_scanner_agrees_with_the_oracle(log: list[Event], live: bool, held: list[Any], status: str) -> None:
    """The reference scanner (one pass, incremental) and properties/stray_oracle.py (whole log,
    written separately from spec/legacy-logs.md) reach the same verdict on any log, with
    and without a snapshot whose prefix was retained away."""
    from loomcheck.properties.stray_oracle import scan_log

    as_json = [{"seq": e.seq, "type": e.type, "payload": e.payload} for e in log]
    mine = scan(log, None, KINDS, live)
    theirs = scan_log(as_json, None, KINDS, live)
    assert [(c.index, c.seq, c.why, c.verdict) for c in mine.classified] == \
        [(c.index, c.seq, c.why, c.verdict) for c in theirs.classified]
    assert [(a.step_id, a.shape, a.seq) for a in mine.ambiguities] == \
        [(a.step_id, a.shape, a.seq) for a in theirs.ambiguities]
    shifted = [Event("x", e.seq + 5, e.type, e.payload) for e in log]
    snapshot = {"status": status, "suspendedOn": {"on": "go1"} if status == "suspended" else None,
                "variables": {"_resumePayloads": held}, "steps": {}}
    mine = scan(shifted, snapshot, KINDS, live)
    theirs = scan_log([{"seq": e.seq, "type": e.type, "payload": e.payload} for e in shifted], snapshot, KINDS, live)
    assert [(c.index, c.seq, c.why, c.verdict) for c in mine.classified] == \
        [(c.index, c.seq, c.why, c.verdict) for c in theirs.classified]
    assert [(a.step_id, a.shape) for a in mine.ambiguities] == [(a.step_id, a.shape) for a in theirs.ambiguities]


def test_residual_3_a_kind_that_changes_between_feeds() -> None:
    """R1a residual 3, on the scanner itself: kinds resolved at feed time. A pre-0104 park
    after step t started is a gate park while t is not human; fed again once t is human,
    the same log gives a different verdict than the warm scanner kept."""
    log = as_events([START, ("STEP_STARTED", {"stepId": "t"}), ("EXECUTION_SUSPENDED", {"condition": {"on": "g"}}),
                     ("g", 1), ("EXECUTION_RESUMED", 1), ("STEP_STARTED", {"stepId": "t"}),
                     ("EXECUTION_SUSPENDED", {"condition": {"on": "g"}})])
    before = {"t": "idempotent"}.get
    after = {"t": "human"}.get
    warm = StrayScanner()
    warm.feed(log[:5], before)
    warm.feed(log[5:], after)
    assert warm.verdict().ambiguities == ()
    assert [a.shape for a in scan(log, None, after).ambiguities] == ["reparked-after-answer"]


def test_every_cut_of_every_fleet_log_equals_one_pass() -> None:
    """R1a on the logs a mixed-version fleet writes (the generated corpus, fixed cases
    included): for every cut position, the prefix fed then the rest equals one full scan,
    snapshot and all, and feeding the whole log again changes nothing."""
    from loomcheck.fleet.generate import generated_case
    from loomcheck.fleet.scripted_cases import fixed_cases
    from loomcheck.reference.legacy import kinds_of
    from loomcheck.spec.programs import FlowProgram

    cases = fixed_cases() + [generated_case(3, i) for i in range(150)]
    cuts = 0
    for case in cases:
        kinds = kinds_of(FlowProgram.model_validate(case.program))
        log = [Event("x", e.seq, e.type, e.payload) for e in case.log]
        whole = scan(log, case.snapshot, kinds, case.live)
        start = log[0].seq - 1 if log else int((case.snapshot or {}).get("sequence") or 0)
        for cut in range(len(log) + 1):
            scanner = (StrayScanner.from_snapshot(case.snapshot, start) if case.snapshot is not None and start > 0
                       else StrayScanner(consumed=start))
            scanner.feed(log[:cut], kinds)
            scanner.feed(log[cut:], kinds)
            scanner.feed(log, kinds)
            assert scanner.verdict(case.live) == whole, (case.id, cut)
            cuts += 1
    assert cuts > 1000
