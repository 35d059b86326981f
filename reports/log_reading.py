"""What the suite reads in each event of one execution's log, for the timeline picture: the
parks and their gate, the answer entries and the suspend point each goes to, status-only
resumes, and what each gate passed with against the entry it is owed. Read with the suite's
own reading of the log (contract/logview.py), never the kernel's."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loomcheck.contract.jsonvalues import json_equal
from loomcheck.contract.logview import (IN_DOUBT, TIMER, Entry, Moment, answers_gate, final_moment, observations,
                                        served_answers, walk)

JSON = Any


@dataclass(frozen=True)
class Link:
    """An answer entry and the suspend point that consumes it (ADR 0057: entry i goes to gate #i)."""

    source: int   # the seq of the EXECUTION_RESUMED that recorded the entry
    target: int   # the seq of that suspend point's park, or of its observation when it passed without parking
    index: int


@dataclass
class Reading:
    notes: dict[int, str] = field(default_factory=dict)      # seq -> what the suite reads in the event
    kinds: dict[int, str] = field(default_factory=dict)      # seq -> park, answer, status-only, observed, ...
    wrong: set[int] = field(default_factory=set)             # seqs whose reading contradicts the decisions
    links: list[Link] = field(default_factory=list)
    pending: list[Link] = field(default_factory=list)        # entries no suspend point in the log consumed (target 0)
    status: str = "pending"                                  # the execution's status at the end of the log


def read_log(log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None = None,
             short: Any = repr, gates: list[str] | None = None) -> Reading:
    """The reading of `log`; `short(value)` shows a value in a note; `gates`: the names of the
    flow's suspend points in call order, when known."""
    reading = Reading()
    walked = [(event, moment, entry) for event, moment, entry in walk(log, snapshot) if type(event.get("seq")) is int]
    parks: dict[int, tuple[int, str | None]] = {}  # park seq -> (the gate index that parked, its name)
    open_park: int | None = None
    for event, moment, entry in walked:
        seq, kind = event["seq"], event.get("type")
        if kind == "EXECUTION_SUSPENDED":
            open_park = seq
            parks[seq] = _park(reading, event, moment)
        elif kind == "EXECUTION_RESUMED":
            _resumed(reading, seq, moment, entry, open_park if moment.status == "suspended" else None, parks,
                     gates or [])
            open_park = None
        elif kind in ("EXECUTION_COMPLETED", "EXECUTION_FAILED", "EXECUTION_CANCELLED"):
            reading.kinds[seq] = "end"
        elif kind == "EXECUTION_STARTED":
            reading.kinds[seq] = "start"
        elif kind == TIMER and answers_gate(moment, kind):  # ADR 0117 D5: a timed gate's second wake
            reading.notes[seq] = f"the timer wakes the parked gate {moment.parked_on!r}"
        elif kind == IN_DOUBT and answers_gate(moment, kind):  # ADR 0104 D4
            reading.notes[seq] = "the operator's verdict on the in-doubt step"
        elif isinstance(kind, str) and answers_gate(moment, kind):
            reading.notes[seq] = f"the resume's own event: its type names the parked gate {moment.parked_on!r}"
    _observed(reading, log, snapshot, short)
    _link_without_park(reading, log, walked)
    reading.status = final_moment(log, snapshot).status
    return reading


def _park(reading: Reading, event: dict[str, JSON], moment: Moment) -> tuple[int, str | None]:
    payload = event.get("payload")
    condition = payload.get("condition") if isinstance(payload, dict) else None
    condition = condition if isinstance(condition, dict) else {}
    on, seq, index = condition.get("on"), event["seq"], moment.entries
    reading.kinds[seq] = "park"
    if on == IN_DOUBT:  # ADR 0104 D4: a park for an operator's verdict on an in-doubt effect
        reading.notes[seq] = f"parks in doubt over step {condition.get('stepId')!r}: an operator's verdict is due"
    else:
        step = condition.get("stepId")
        human = f", human step {step!r}" if isinstance(step, str) else ""
        reading.notes[seq] = f"parks: gate #{index} {on!r}{human} waits for its answer"
    return index, on if isinstance(on, str) else None


def _resumed(reading: Reading, seq: int, moment: Moment, entry: Entry | None, open_park: int | None,
             parks: dict[int, tuple[int, str | None]], gates: list[str]) -> None:
    if entry is None:  # ADR 0104 D3: a null resume that answers no suspend point only changes the status
        reading.kinds[seq] = "status-only"
        reading.notes[seq] = "status only: a null resume that answers no gate (ADR 0104 D3)"
        return
    reading.kinds[seq] = "answer"
    if open_park is not None and parks[open_park][0] == entry.index:
        reading.links.append(Link(seq, open_park, entry.index))
        gate = "the in-doubt step's verdict" if parks[open_park][1] == IN_DOUBT else \
            f"gate #{entry.index} {parks[open_park][1]!r}"
        reading.notes[seq] = f"answer entry {entry.index}, for {gate} parked at #{open_park}"
        return
    owner = f"gate #{entry.index}" + (f" {gates[entry.index]!r}" if entry.index < len(gates) else "")
    reading.wrong.add(seq)
    if open_park is not None:
        reading.notes[seq] = f"recorded as answer entry {entry.index} while gate #{parks[open_park][0]} " \
                             f"{parks[open_park][1]!r} is parked: by the index rule it goes to {owner}"
    else:
        reading.notes[seq] = f"became answer entry {entry.index} while parked at no gate: {owner} passes with it, " \
                             f"though nobody answered that gate"


def _observed(reading: Reading, log: list[dict[str, JSON]], snapshot: dict[str, JSON] | None, short: Any) -> None:
    """What each gate passed with (the flow's observe), against entry i of the answers
    recorded before it (ADR 0057)."""
    for seen in observations(log):
        reading.kinds[seen.seq] = "observed"
        recorded = served_answers(log, snapshot, seen.seq)
        said = f"gate #{seen.gate} {seen.on!r} passed with {short(seen.value)}"
        if seen.gate >= len(recorded):
            reading.wrong.add(seen.seq)
            reading.notes[seen.seq] = f"{said}, but no entry {seen.gate} was recorded: nobody answered it"
        elif not json_equal(seen.value, recorded[seen.gate].payload):
            owed = recorded[seen.gate]
            origin = f" (#{owed.seq})" if owed.seq else " (the snapshot)"
            reading.wrong.add(seen.seq)
            reading.notes[seen.seq] = f"{said}, but entry {seen.gate} is {short(owed.payload)}{origin}"
        elif owed_seq := recorded[seen.gate].seq:
            if owed_seq in reading.wrong:  # the entry it is owed is one no resume addressed to it
                reading.wrong.add(seen.seq)
                reading.notes[seen.seq] = f"{said}: entry {seen.gate}, which #{owed_seq} recorded against the " \
                                          f"decisions: an answer nobody gave this gate"
            else:
                reading.notes[seen.seq] = f"{said}: entry {seen.gate}, recorded at #{owed_seq}"
        else:
            reading.notes[seen.seq] = f"{said}: entry {seen.gate}, from the snapshot"


def _link_without_park(reading: Reading, log: list[dict[str, JSON]],
                       walked: list[tuple[dict[str, JSON], Moment, Entry | None]]) -> None:
    """An entry recorded while no park of its gate was open goes to the gate that passes with it:
    the first later observation of gate #index (ADR 0057's index rule)."""
    linked = {link.source for link in reading.links}
    seen = observations(log)
    for event, _, entry in walked:
        if entry is None or event["seq"] in linked:
            continue
        target = next((o.seq for o in seen if o.gate == entry.index and o.seq > event["seq"]), None)
        if target is not None:
            reading.links.append(Link(event["seq"], target, entry.index))
        else:
            reading.pending.append(Link(event["seq"], 0, entry.index))
