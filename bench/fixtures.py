"""The logs the sections share, written once per run into one temporary folder:
a JSONL file and SQLite stores of the realistic mix (bench/logs.py)."""

from __future__ import annotations

import atexit
import itertools
import shutil
import tempfile
from pathlib import Path

import orjson

from loomcheck.bench.logs import entries, fill

_FOLDER: Path | None = None
_copies = itertools.count(1)


def folder() -> Path:
    global _FOLDER
    if _FOLDER is None:
        _FOLDER = Path(tempfile.mkdtemp(prefix="loomcheck-bench-"))
        atexit.register(shutil.rmtree, _FOLDER, True)
    return _FOLDER


def jsonl_log(count: int, lean: bool = False) -> Path:
    """`count` events as JSON Lines, {seq, type, payload} per line."""
    path = folder() / f"log-{count}{'-lean' if lean else ''}.jsonl"
    if not path.exists():
        with path.open("wb") as out:
            for seq, (event_type, payload) in enumerate(entries(count, lean=lean), start=1):
                out.write(orjson.dumps({"seq": seq, "type": event_type, "payload": payload}))
                out.write(b"\n")
    return path


def sqlite_log(count: int, parked: bool = False) -> Path:
    """A SQLite store file holding one execution "x" of `count` events, written through the store's
    append; with `parked` the execution ends parked on the gate "review". Callers that append
    must copy it first (`copy_of`)."""
    from loomcheck.reference.stores.sqlite import SqliteEventStore

    path = folder() / f"store-{count}{'-parked' if parked else ''}.sqlite"
    if not path.exists():
        with SqliteEventStore(path) as store:
            fill(store, count, parked=parked)
            store._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # type: ignore[union-attr]  # one file to copy
    return path


def copy_of(path: Path) -> Path:
    """A private copy of a store file, for a section that appends to it."""
    target = folder() / f"copy-{next(_copies)}-{path.name}"
    shutil.copyfile(path, target)
    return target
