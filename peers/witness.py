"""The witness: what an adapter saw a peer library do, written as Loom events, in SQLite
(`":memory:"`, or a file a relaunched worker reopens). Rendered into every peer reproducer;
which event stands for what the peer did: docs/peers.md, "How an adapter works"."""

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

    def logs(self) -> dict[str, list[dict[str, JSON]]]:
        """Every execution's log that holds an event (an execution only named has none)."""
        with self._lock:
            named = [json.loads(r[0]) for r in self._db.execute("SELECT DISTINCT execution FROM events")]
        return {execution: self.log(execution) for execution in named}

    def started(self, execution: str, step_id: str) -> int:
        """How many times the peer has run this step's body (its STEP_STARTED count)."""
        return sum(1 for e in self.log(execution)
                   if e["type"] == "STEP_STARTED" and isinstance(e["payload"], dict) and e["payload"].get("stepId") == step_id)

    def last_type(self, execution: str) -> str | None:
        log = self.log(execution)
        return log[-1]["type"] if log else None
