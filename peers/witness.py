"""The witness: what an adapter saw a peer library do, written as Loom events.

A peer (LangGraph, DBOS, ...) keeps its own records in its own shape, so an
adapter cannot hand the suite the peer's log. Instead the generic flow body
(`walker.py`) and the adapter note each thing *the peer* does, at the moment it
does it, as the Loom event the spec names for it:

    the peer runs a step's body        STEP_STARTED {stepId, attempt}
    the peer hands the step's value    STEP_COMPLETED {stepId, output}   (as the peer returned it)
    the peer parks the run             EXECUTION_SUSPENDED {condition}   (as the peer surfaced it)
    the peer accepts an answer         <type> payload, EXECUTION_RESUMED payload
    a gate returns a value             loomcheck.observed {gate, on, value}  (at the program's observe)
    the peer's workflow returns        EXECUTION_COMPLETED {output}

The adapter decides nothing the suite judges: whether a step runs or replays,
which answer a gate gets, whether an answer is accepted, are the peer's. So a
replayed step that the peer runs again shows as a second STEP_STARTED, and an
answer handed to the wrong gate shows as an observation that disagrees with the
recorded answers. What the witness cannot see (the peer's internal writes) is
judged through `read_state`, which every adapter reads from the peer's own API.

Stored in SQLite: `":memory:"` for in-process peers, a file under the store
directory for a peer whose process the harness kills (DBOS), so the witness
survives the relaunch as the peer's own database does.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

JSON = Any


def _text(value: JSON) -> str:
    """Every string goes into SQLite as ASCII JSON: a hostile name with a lone surrogate
    (the hostile-names corpus) cannot be encoded as UTF-8, and must survive anyway."""
    return json.dumps(value)


def fact(event_type: str, payload: JSON) -> str:
    """Two emits are the same fact when type and payload are equal as JSON (key order aside)."""
    return event_type + "\0" + json.dumps(payload, sort_keys=True)


class Witness:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        self._lock = threading.RLock()  # peers may run the flow body on a worker thread
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL" if self.path != ":memory:" else "PRAGMA journal_mode=MEMORY")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS events (execution TEXT NOT NULL, seq INTEGER NOT NULL, "
                         "type TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (execution, seq))")
        self._db.execute("CREATE TABLE IF NOT EXISTS executions (execution TEXT PRIMARY KEY, flow TEXT NOT NULL, "
                         "position INTEGER NOT NULL)")

    # -- writing ---------------------------------------------------------------------
    def begin(self, execution: str, flow_id: str) -> None:
        """Note a new execution (before its EXECUTION_STARTED)."""
        with self._lock:
            self._db.execute("INSERT INTO executions VALUES (?, ?, (SELECT COUNT(*) FROM executions))",
                             (_text(execution), _text(flow_id)))

    def append(self, execution: str, event_type: str, payload: JSON) -> dict[str, JSON]:
        text = _text(payload)
        with self._lock:
            row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE execution = ?",
                                   (_text(execution),)).fetchone()
            seq = int(row[0]) + 1
            self._db.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (_text(execution), seq, _text(event_type), text))
        return {"seq": seq, "type": event_type, "payload": json.loads(text)}

    def emit(self, execution: str, event_type: str, payload: JSON) -> bool:
        """An application event, appended unless the log already holds the exact fact
        (the flow-program language's emit rule). Whether it was appended."""
        key = fact(event_type, payload)
        with self._lock:
            if any(fact(e["type"], e["payload"]) == key for e in self.log(execution)):
                return False
            self.append(execution, event_type, payload)
            return True

    def reset(self) -> None:
        with self._lock:
            self._db.execute("DELETE FROM events")
            self._db.execute("DELETE FROM executions")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- reading ---------------------------------------------------------------------
    def exists(self, execution: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM executions WHERE execution = ?", (_text(execution),)).fetchone() is not None

    def flow_of(self, execution: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT flow FROM executions WHERE execution = ?", (_text(execution),)).fetchone()
        return json.loads(row[0]) if row else None

    def executions(self) -> list[str]:
        with self._lock:
            return [json.loads(r[0]) for r in self._db.execute("SELECT execution FROM executions ORDER BY position")]

    def log(self, execution: str) -> list[dict[str, JSON]]:
        with self._lock:
            rows = self._db.execute("SELECT seq, type, payload FROM events WHERE execution = ? ORDER BY seq",
                                    (_text(execution),)).fetchall()
        return [{"seq": seq, "type": json.loads(t), "payload": json.loads(p)} for seq, t, p in rows]

    def started(self, execution: str, step_id: str) -> int:
        """How many times the peer has run this step's body (its STEP_STARTED count)."""
        return sum(1 for e in self.log(execution)
                   if e["type"] == "STEP_STARTED" and isinstance(e["payload"], dict) and e["payload"].get("stepId") == step_id)

    def last_type(self, execution: str) -> str | None:
        log = self.log(execution)
        return log[-1]["type"] if log else None
