"""Legacy answers (ADR 0104, decision D2 and amendment R1a): the runtime's stray scan, in the order
spec/legacy-logs.md section 4 gives, and what it keeps for it: the memory of warnings given,
the cache of clean scanners, the operator's override. The scan itself is reference/scanner.py."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

from loomcheck.reference.approvals import signed_discard
from loomcheck.reference.authenticator import Verdict as Grant
from loomcheck.reference.context import discard_decision_id
from loomcheck.reference.errors import KernelRefusal, ResumeRefusedError
from loomcheck.reference.scanner import Kinds, NonContiguous, StrayScanner, Verdict
from loomcheck.reference.security import ResumeOptions
from loomcheck.reference.stores.base import EventStore, stream
from loomcheck.spec.names import TIMER_FIRED, WARN_MEMORY
from loomcheck.spec.programs import FlowProgram, StepOp

SCAN_CACHE = 1024   # R1a: "a bounded process-local map"

Warn = Callable[[dict[str, Any]], None]


def kinds_of(program: FlowProgram | None) -> Kinds:
    """Step kinds from the definition; a step it does not hold is unresolvable (None)."""
    kinds = {op.id: op.kind for op in program.calls() if isinstance(op, StepOp)} if program else {}
    return kinds.get


class WarnMemory:
    """ADR 0104 D2: warn once per execution and verdict per runtime, remembering at
    most WARN_MEMORY pairs, oldest forgotten first, so a long-lived runtime neither
    grows without bound nor warns on every resume."""

    def __init__(self, limit: int = WARN_MEMORY) -> None:
        self.limit = limit
        self.said: OrderedDict[tuple[str, str], None] = OrderedDict()

    def first_time(self, execution_id: str, verdict: str) -> bool:
        key = (execution_id, verdict)
        if key in self.said:
            return False
        self.said[key] = None
        while len(self.said) > self.limit:  # ADR 0104 D2: bounded, FIFO
            self.said.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self.said)


@dataclass
class CachedScan:
    scanner: StrayScanner
    seq: int                 # the last seq it consumed
    definition: object       # the definition object its step kinds came from (compared by identity)


class ScanCache:
    """R1a: per execution, the scanner after the last clean scan; bounded, oldest dropped first."""

    def __init__(self, limit: int = SCAN_CACHE) -> None:
        self.limit = limit
        self.entries: OrderedDict[str, CachedScan] = OrderedDict()

    def take(self, execution_id: str) -> CachedScan | None:
        """Remove and return the entry: it is put back only after a clean scan."""
        return self.entries.pop(execution_id, None)

    def keep(self, execution_id: str, entry: CachedScan) -> None:
        self.entries[execution_id] = entry
        while len(self.entries) > self.limit:
            self.entries.popitem(last=False)

    def drop(self, execution_id: str) -> None:
        self.entries.pop(execution_id, None)


@dataclass(frozen=True)
class Discard:
    """discardLegacyAnswers: {stepId, count}."""

    step_id: str
    count: int

    @property
    def decision_id(self) -> str:
        return discard_decision_id(self.step_id)


def parse_discard(value: Any) -> Discard | None:
    """None when there is no override; refused invalid-discard when it is malformed."""
    try:
        override = signed_discard(value)  # the one reading of the override's shape (spec/signing.md)
    except (TypeError, ValueError):
        raise ResumeRefusedError("invalid-discard", "discardLegacyAnswers must be exactly {stepId: a non-empty "
                                                    "string, count: an integer >= 0}") from None
    return None if override is False else Discard(override["stepId"], override["count"])


def warning_of(execution_id: str, verdict: Verdict, kind: str) -> dict[str, Any]:
    """What on_warn is handed: the execution, the verdict and its entries."""
    return {"executionId": execution_id, "verdict": kind,
            "entries": [{"index": c.index, "seq": c.seq, "why": c.why} for c in verdict.classified
                        if c.verdict == kind]}


class LegacyAnswers:
    """The runtime's stray scan: warn, refuse ambiguous answers, honour an authenticated override."""

    store: EventStore
    flows: dict[str, FlowProgram]
    on_warn: Warn | None
    warned: WarnMemory
    scans: ScanCache

    def scan_legacy(self, execution_id: str, flow_id: str | None, options: ResumeOptions | None,
                    grant: Grant | None, event_type: str | None, live: bool = False) -> Discard | None:
        """The stray scan (spec/legacy-logs.md): warn, then refuse ambiguous-legacy-answers
        unless an authenticated override resolves the step. The override to record, if any."""
        discard = parse_discard(options.discard_legacy_answers if options else None)
        if discard is not None:  # ADR 0104 D2: the override is honoured only on a verified operator's event
            if event_type == TIMER_FIRED or options is None or options.system:
                raise ResumeRefusedError("discard-on-kernel-resume", "an override is an operator's approval; "
                                         "the kernel's own resumes carry none")
            if grant is None:
                raise ResumeRefusedError("discard-unverified", "discardLegacyAnswers is honoured only on an event "
                                         "the configured ResumeAuthenticator verified, covering the override")
        verdict = self.scanned(execution_id, self.flows.get(flow_id or ""), live, fresh=discard is not None)
        self.warn(execution_id, verdict)  # ADR 0104 D2: replayed as written, and flagged
        ambiguous = verdict.ambiguous_steps()
        if discard is not None:
            if discard.step_id not in ambiguous:
                raise ResumeRefusedError("discard-without-ambiguity", f"the log holds no unresolved ambiguity "
                                         f"for step {discard.step_id!r}")
            ambiguous.discard(discard.step_id)
        if ambiguous:  # ADR 0104 D2: refused, not guessed; nothing appended
            raise ResumeRefusedError("ambiguous-legacy-answers", f"the answers of human step(s) "
                                     f"{', '.join(sorted(ambiguous))} cannot be told apart from pre-0104 entries; "
                                     f"inspect the log, then resume with an authenticated discardLegacyAnswers")
        return discard

    def scanned(self, execution_id: str, program: FlowProgram | None, live: bool, fresh: bool) -> Verdict:
        """R1a: feed the cached clean scanner only the new events, or scan the whole
        retained log; keep the scanner again only when its verdict is clean."""
        kinds = kinds_of(program)
        cached = self.scans.take(execution_id)  # ADR 0104 R1a: the scan is incremental, not skipped
        last = self.store.next_seq(execution_id) - 1
        scanner: StrayScanner | None = None
        if cached is not None and not fresh and cached.definition is program and last >= cached.seq:
            try:
                cached.scanner.feed(self.store.read(execution_id, after=cached.seq), kinds)
                scanner = cached.scanner
            except NonContiguous:
                scanner = None  # the tail does not continue what was scanned: rescan
            if scanner is not None and scanner.consumed != last:
                scanner = None  # retention removed events it never saw
        if scanner is None:
            scanner = self.full_scan(execution_id, kinds)
        verdict = scanner.verdict(live)
        if verdict.clean and not fresh:  # ADR 0104 R1a: kept only after a clean scan
            self.scans.keep(execution_id, CachedScan(scanner, scanner.consumed, program))
        return verdict

    def full_scan(self, execution_id: str, kinds: Kinds) -> StrayScanner:
        """One pass over the retained log, streamed a page at a time (a long log is never held whole)."""
        events = stream(self.store, execution_id)
        head = next(events, None)
        first = head.seq if head is not None else self.store.next_seq(execution_id)
        snapshot = self.store.get_snapshot(execution_id) if first > 1 else None
        if snapshot is not None:
            scanner = StrayScanner.from_snapshot(snapshot[1], first - 1)  # the prefix was retained away
        else:
            scanner = StrayScanner(consumed=first - 1)
        if head is not None:
            scanner.feed(itertools.chain((head,), events), kinds)
        return scanner

    @contextmanager
    def refusal_drops_scan(self, execution_id: str) -> Iterator[None]:
        """R1a: a refusal drops the cached scanner; the next operation scans the whole log."""
        try:
            yield
        except KernelRefusal:
            self.scans.drop(execution_id)  # ADR 0104 R1a: a refusal drops the entry
            raise

    def warn(self, execution_id: str, verdict: Verdict) -> None:
        for kind in verdict.warned:  # ADR 0104 D2: through onWarn, once per execution and verdict
            if self.warned.first_time(execution_id, kind) and self.on_warn is not None:
                self.on_warn(warning_of(execution_id, verdict, kind))
