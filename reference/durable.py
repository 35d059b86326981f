"""What a durable reference keeps beside its SQLite store (docs/stores.md): the outside
world's ledger of effects, the operator's warnings and the deployment's clock, written so
that a new process on the same directory finds them again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class Durable:
    """What a durable reference keeps beside its SQLite store, so that a new process on
    the same directory finds it again: the outside world's ledger of effects and the
    operator's warnings (appended a line at a time, flushed, so a SIGKILL loses none
    that was written) and the deployment's clock. With `fsync` (the store's FULL) every
    write is also on disk before it returns, so a power loss loses none either: the
    file, and its directory when a file is created or renamed into place."""

    def __init__(self, directory: Path, *, fsync: bool = True) -> None:
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        if created and fsync:
            sync_directory(directory.parent)
        self.directory = directory
        self.fsync = fsync
        self.ledger = JsonLines(directory / "effects.jsonl", fsync=fsync)
        self.warnings = JsonLines(directory / "warnings.jsonl", fsync=fsync)

    def clock(self, default: int) -> int:
        try:
            return int(json.loads((self.directory / "clock.json").read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return default

    def save_clock(self, now_ms: int) -> None:
        tmp = self.directory / "clock.json.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(str(now_ms))
            out.flush()
            if self.fsync:
                os.fsync(out.fileno())  # the new content on disk before the rename makes it the clock
        os.replace(tmp, self.directory / "clock.json")
        if self.fsync:
            sync_directory(self.directory)  # the rename itself

    def clear(self, now_ms: int) -> None:
        self.ledger.clear()
        self.warnings.clear()
        self.save_clock(now_ms)

    def close(self) -> None:
        self.ledger.close()
        self.warnings.close()


class JsonLines(list):  # type: ignore[type-arg]
    """A list that is also a file of JSON lines: every append is written through (and,
    with `fsync`, synced)."""

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        super().__init__()
        self.path = path
        self.fsync = fsync
        existed = path.exists()
        if existed:
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    super().append(json.loads(line))
                except ValueError:
                    break  # a line cut short by a kill: the ones before it are whole
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - held for the driver's life
        if fsync and not existed:
            sync_directory(path.parent)  # the new file's name

    def append(self, item: Any) -> None:
        super().append(item)
        self._file.write(json.dumps(item, ensure_ascii=False) + "\n")
        self._written()

    def clear(self) -> None:
        super().clear()
        self._file.truncate(0)
        self._written()

    def _written(self) -> None:
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def sync_directory(directory: Path) -> None:
    """fsync a directory, so a file created or renamed in it is there after a power loss.
    POSIX only: elsewhere a directory cannot be opened to sync it."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
