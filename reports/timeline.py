"""A counterexample as a timeline (docs/report-page.md): one lane per execution, one group of
rows per operation the suite made, in each lane the events that operation appended by sequence
number, refusals and crashes marked, the events the explanation cites numbered with their role,
and arrows from each answer entry to the suspend point that consumes it (reports/log_reading.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from pydantic import ValidationError

from loomcheck.contract.jsonvalues import show
from loomcheck.contract.logview import TERMINAL, flow_id_of, migrated
from loomcheck.contract.script import describe, execution_of, from_model
from loomcheck.reports.log_reading import Reading, read_log
from loomcheck.reports.model import EvidenceModel, ExplanationModel
from loomcheck.reports.program_words import program_lines
from loomcheck.spec.programs import FlowProgram
from loomcheck.spec.regressions import DefineModel, Found, LoadModel, OperationModel

JSON = Any
TRACK = 14  # px between two arrows' vertical rails in a lane's gutter (the CSS draws them so)


def short(value: JSON, limit: int = 60) -> str:
    """A value shown in a line; a value nested past the interpreter's recursion limit says so."""
    try:
        return show(value, limit)
    except (RecursionError, ValueError):
        return "<nested too deep to show>"


@dataclass(frozen=True)
class Cite:
    number: int
    role: str


@dataclass
class Box:
    """One thing drawn in a lane: an event, a refusal, a crash, an appended event the log lost, or a
    gate ahead that an entry already recorded is owed to."""

    kind: str          # start, park, answer, status-only, observed, end, event, refusal, crash, gone, future
    label: str         # the event's type, or the refusal's or crash's words
    payload: str = ""
    title: str = ""
    note: str = ""
    wrong: bool = False
    seq: int | None = None
    cites: list[Cite] = field(default_factory=list)


@dataclass(frozen=True)
class Piece:
    """One arrow's part in one row of a lane's gutter."""

    track: int
    shape: str         # through, from-down, from-up, to-from-above, to-from-below
    wrong: bool


@dataclass
class Row:
    operation: int     # index into Timeline.operations
    first: bool
    boxes: list[Box | None]
    pieces: list[list[Piece]]


@dataclass(frozen=True)
class Step:
    number: int | None  # None: a group of rows no operation made (events it did not append, gates ahead)
    text: str
    details: list[str]  # a define's program, a call per line
    outcome: str | None
    refused: bool
    rows: int


@dataclass(frozen=True)
class Cited:
    """An event the explanation cites, for the list beside the picture."""

    number: int
    ref: str
    execution: str | None
    role: str
    before: str
    drawn: bool


@dataclass
class Timeline:
    lanes: list[str]
    operations: list[Step]
    rows: list[Row]
    tracks: list[int]
    recorded: bool      # the file records what the implementation did (outcomes and logs)
    cited: list[Cited]

    @property
    def columns(self) -> str:
        """The CSS grid's columns: the operations, then a gutter and a lane per execution."""
        lanes = " ".join(f"{TRACK * tracks + 12}px minmax(0, 1fr)" for tracks in self.tracks)
        return f"minmax(13rem, 19rem) {lanes}"


def build_timeline(operations: list[OperationModel], found: Found | None,
                   explanation: ExplanationModel | None) -> Timeline:
    """The picture of `operations` as the implementation ran them (`found`); without its
    outcomes and logs (a file written before they were recorded), the operations alone."""
    recorded = found is not None and found.outcomes is not None and found.logs is not None
    logs: dict[str, list[dict[str, JSON]]] = {x: [e for e in events if isinstance(e, dict)]
                                              for x, events in (found.logs or {}).items()} if recorded else {}
    drawing = _Drawing(operations, logs)
    for index, model in enumerate(operations):
        outcome = found.outcomes[index] if found and found.outcomes and index < len(found.outcomes) else None
        appended = found.appended[index] if found and found.appended and index < len(found.appended) else {}
        drawing.operation(index, model, outcome if recorded else None, appended if recorded else {})
    drawing.unattributed()
    drawing.ahead()
    tracks = [_draw_arrows(drawing.rows, index, spans) for index, spans in enumerate(drawing.spans())]
    return Timeline(drawing.lanes, drawing.steps, drawing.rows, tracks, recorded,
                    cite(explanation, drawing.lanes, drawing.placed, drawing.by_seq))


class _Drawing:
    """The rows of a timeline as they are laid out, operation by operation."""

    def __init__(self, operations: list[OperationModel], logs: dict[str, list[dict[str, JSON]]]) -> None:
        self.operations = operations
        self.lanes = list(dict.fromkeys([*(x for x in map(_execution, operations) if x is not None), *logs]))
        self.logs = logs
        self.gates = {x: _gates(operations, logs.get(x, []), _snapshot(operations, x)) for x in self.lanes}
        self.readings = {x: read_log(logs.get(x, []), _snapshot(operations, x), short, self.gates[x])
                         for x in self.lanes}
        self.by_seq = {x: {e["seq"]: e for e in reversed(logs.get(x, [])) if type(e.get("seq")) is int}
                       for x in self.lanes}
        self.steps: list[Step] = []
        self.rows: list[Row] = []
        self.placed: dict[tuple[str, int], tuple[int, Box]] = {}  # (lane, seq) -> (row, box)
        self.drawn: set[tuple[str, int]] = set()
        self.future: dict[tuple[str, int], int] = {}  # (lane, source seq) -> the row of the gate it goes to

    def operation(self, index: int, model: OperationModel, outcome: str | None,
                  appended: dict[str, list[int]]) -> None:
        columns: dict[str, list[Box]] = {lane: [] for lane in self.lanes}
        for lane, seqs in appended.items():
            if lane in columns:
                columns[lane] = [_event_box(seq, self.by_seq[lane].get(seq), self.readings[lane]) for seq in seqs]
                self.drawn.update((lane, seq) for seq in seqs)
        _mark_outcome(columns, _execution(model), outcome)
        text, details = _words(model)
        self.add(Step(index + 1, text, details, _outcome_words(outcome), _refused(outcome),
                      max([1, *map(len, columns.values())])), columns)

    def unattributed(self) -> None:
        """Events a log holds that no operation appended, after the last operation."""
        rest = {lane: [_event_box(seq, event, self.readings[lane]) for seq, event in sorted(self.by_seq[lane].items())
                       if (lane, seq) not in self.drawn] for lane in self.lanes}
        if any(rest.values()):
            self.add(Step(None, "in the log, appended by no operation the suite saw", [], None, False,
                          max(map(len, rest.values()))), rest)

    def ahead(self) -> None:
        """The gates not reached yet that answer entries already recorded are owed (ADR 0057's
        index rule), named from the flow program, for executions that can still reach them."""
        columns: dict[str, list[Box]] = {lane: [] for lane in self.lanes}
        sources: list[tuple[str, int, int]] = []  # (lane, the entry's seq, the gate's row within the group)
        for lane in self.lanes:
            reading = self.readings[lane]
            gates = self.gates[lane]
            for link in reading.pending if reading.status not in TERMINAL else []:
                if link.index < len(gates):
                    sources.append((lane, link.source, len(columns[lane])))
                    columns[lane].append(Box("future", f"gate #{link.index} {gates[link.index]!r}",
                                             note=f"not reached yet: by ADR 0057's index rule it passes with answer "
                                                  f"entry {link.index}, recorded at #{link.source}",
                                             wrong=link.source in reading.wrong))
        if sources:
            first = len(self.rows)
            self.add(Step(None, "what the flow reaches next (its program; not in the log yet)", [], None, False,
                          max(map(len, columns.values()))), columns)
            self.future.update({(lane, source): first + offset for lane, source, offset in sources})

    def add(self, step: Step, columns: dict[str, list[Box]]) -> None:
        self.steps.append(step)
        for offset in range(step.rows):
            boxes: list[Box | None] = []
            for lane in self.lanes:
                box = columns[lane][offset] if offset < len(columns[lane]) else None
                if box is not None and box.seq is not None and box.kind != "gone":
                    self.placed.setdefault((lane, box.seq), (len(self.rows), box))
                boxes.append(box)
            self.rows.append(Row(len(self.steps) - 1, offset == 0, boxes, [[] for _ in self.lanes]))

    def spans(self) -> list[list[tuple[int, int, bool]]]:
        """Per lane, each arrow as (source row, target row, against the decisions)."""
        found = []
        for lane in self.lanes:
            reading, mine = self.readings[lane], []
            for link in reading.links:
                if (lane, link.source) in self.placed and (lane, link.target) in self.placed:
                    mine.append((self.placed[(lane, link.source)][0], self.placed[(lane, link.target)][0],
                                 link.source in reading.wrong or link.target in reading.wrong))
            for (x, source), row in self.future.items():
                if x == lane and (lane, source) in self.placed:
                    mine.append((self.placed[(lane, source)][0], row, source in reading.wrong))
            found.append(mine)
        return found


def _execution(model: OperationModel) -> str | None:
    during = getattr(model, "during", None)  # a kill during an operation: that operation's execution
    return execution_of(from_model(during if during is not None else model))


def _snapshot(operations: list[OperationModel], lane: str) -> dict[str, JSON] | None:
    """The snapshot the execution's log continues from (its last load's), for reading the log."""
    loads = [m for m in operations if isinstance(m, LoadModel) and m.execution == lane]
    return loads[-1].snapshot if loads else None


def _words(model: OperationModel) -> tuple[str, list[str]]:
    """The operation in words: a define names its flow's calls, one per line."""
    if isinstance(model, DefineModel):
        lines = program_lines(model.program)
        if lines is not None:
            return f"define flow {model.flow!r}", lines
    return describe(from_model(model)), []


def _gates(operations: list[OperationModel], log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None) -> list[str]:
    """The names of the suspend points of the flow the execution runs, in call order (none once
    resumeAs moved it: its target decides positions, ADR 0104 D1)."""
    flow = flow_id_of(log, snapshot)
    programs = [m.program for m in operations if isinstance(m, DefineModel) and m.flow == flow]
    if not programs or migrated(log):
        return []
    try:
        return FlowProgram.model_validate(programs[-1]).gates()
    except (ValidationError, ValueError, RecursionError):
        return []


def _event_box(seq: int, event: dict[str, JSON] | None, reading: Reading) -> Box:
    if event is None:
        return Box("gone", "", note="appended here, no longer in the log", wrong=True, seq=seq)
    payload = event.get("payload")
    return Box(reading.kinds.get(seq, "event"), str(event.get("type")), short(payload, 90), short(payload, 600),
               reading.notes.get(seq, ""), seq in reading.wrong, seq)


def _mark_outcome(columns: dict[str, list[Box]], lane: str | None, outcome: str | None) -> None:
    """A refusal or a crash, drawn in the lane of the operation's execution, after what it appended."""
    if outcome is None or lane not in columns:
        return
    if outcome.startswith("refused:"):
        appended = len(columns[lane])
        after = f"yet appended {appended} event{'s' if appended != 1 else ''}" if appended else "nothing appended"
        columns[lane].append(Box("refusal", f"refused: {outcome[len('refused:'):]}", note=after, wrong=appended > 0))
    elif outcome == "ok:crashed":
        columns[lane].append(Box("crash", "the worker crashed", note="the operation returned crashed: "
                                                                     "what it appended stays in the log"))


def _outcome_words(outcome: str | None) -> str | None:
    if outcome is None:
        return None
    if outcome.startswith("refused:"):
        return f"refused ({outcome[len('refused:'):]})"
    if outcome == "ok:crashed":
        return "crashed: the worker died mid-run"
    return f"ok ({outcome[3:]})" if outcome.startswith("ok:") and outcome[3:] else outcome


def _refused(outcome: str | None) -> bool:
    return outcome is not None and outcome.startswith("refused:")


def _draw_arrows(rows: list[Row], lane: int, spans: list[tuple[int, int, bool]]) -> int:
    """Each arrow in the lane's gutter, on the first track free along its rows (the shortest
    nearest the boxes); returns the tracks used."""
    taken: list[list[tuple[int, int]]] = []
    for source, target, wrong in sorted(spans, key=lambda s: abs(s[0] - s[1])):
        low, high = min(source, target), max(source, target)
        track = next((t for t, used in enumerate(taken) if all(high < a or low > b for a, b in used)), len(taken))
        if track == len(taken):
            taken.append([])
        taken[track].append((low, high))
        down = target > source
        rows[source].pieces[lane].append(Piece(track, "from-down" if down else "from-up", wrong))
        rows[target].pieces[lane].append(Piece(track, "to-from-above" if down else "to-from-below", wrong))
        for row in range(low + 1, high):
            rows[row].pieces[lane].append(Piece(track, "through", wrong))
    return len(taken)


def cite(explanation: ExplanationModel | None, lanes: Sequence[str] = (),
         placed: dict[tuple[str, int], tuple[int, Box]] | None = None,
         by_seq: dict[str, dict[int, dict[str, JSON]]] | None = None) -> list[Cited]:
    """The events the explanation cites, numbered in its order, each box drawn for one marked
    with its number and role (with no picture: the list alone)."""
    placed, by_seq = placed or {}, by_seq or {}
    cited: list[Cited] = []
    for number, evidence in enumerate(explanation.evidence if explanation is not None else [], start=1):
        lane = _lane_of(evidence, lanes, by_seq)
        spot = placed.get((lane, evidence.seq)) if lane is not None else None
        if spot is not None:
            spot[1].cites.append(Cite(number, evidence.role))
        ref = f"#{evidence.seq} {evidence.type} {evidence.payload}".rstrip() if evidence.type else f"#{evidence.seq}"
        cited.append(Cited(number, ref, lane or evidence.execution, evidence.role, evidence.before, spot is not None))
    return cited


def _lane_of(evidence: EvidenceModel, lanes: Sequence[str], by_seq: dict[str, dict[int, dict[str, JSON]]]) -> str | None:
    if evidence.execution in lanes:
        return evidence.execution
    holders = [lane for lane in lanes if evidence.seq in by_seq[lane]
               and (not evidence.type or by_seq[lane][evidence.seq].get("type") == evidence.type)]
    return holders[0] if holders else None
