"""Durability beyond a process crash (docs/stores.md): the reference's SQLite store syncs
every commit (synchronous=FULL) unless told NORMAL, and the files a durable reference keeps
beside it, the effect ledger and the clock, are fsynced when written (the file, and its
directory when the file is created or renamed into place)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from loomcheck.run.loading import resolve_factory
from loomcheck.reference.driver import ReferenceDriver

FLOW = {"language": "loomcheck-flow/1", "body": [{"op": "step", "id": "a", "output": 1}, {"op": "complete"}]}
FULL, NORMAL = 2, 1  # what PRAGMA synchronous reads


def synchronous(driver: ReferenceDriver) -> int:
    return driver.store._conn.execute("PRAGMA synchronous").fetchone()[0]  # type: ignore[attr-defined]


def test_a_durable_reference_store_syncs_every_commit_unless_told_normal(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for made, wanted in ((lambda: ReferenceDriver(store="sqlite", directory=str(tmp_path / "a")), FULL),
                         (lambda: ReferenceDriver(store="sqlite", directory=str(tmp_path / "b"), synchronous="NORMAL"),
                          NORMAL)):
        driver = made()
        try:
            assert synchronous(driver) == wanted
        finally:
            driver.close()
    # Where the command line chooses the store: --impl reference (the default) and reference:sqlite:normal.
    monkeypatch.setenv("LOOMCHECK_STORE_DIR", str(tmp_path / "c"))
    for spec, wanted in (("reference", FULL), ("reference:sqlite", FULL), ("reference:sqlite:normal", NORMAL)):
        driver = resolve_factory(spec)()
        try:
            assert synchronous(driver) == wanted, spec
        finally:
            driver.close()


def fsynced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Every os.fsync from now on, as the (device, inode) of what it synced: a file or a directory."""
    synced: list[tuple[int, int]] = []
    real = os.fsync

    def counting(fd: int) -> None:
        stat = os.fstat(fd)
        synced.append((stat.st_dev, stat.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return synced


def identity(path: Path) -> tuple[int, int]:
    stat = path.stat()
    return stat.st_dev, stat.st_ino


@pytest.mark.skipif(os.name != "posix", reason="a directory is fsynced on POSIX only")
def test_the_ledger_and_the_clock_are_fsynced_with_their_directory(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    synced = fsynced(monkeypatch)
    directory = tmp_path / "store"
    driver = ReferenceDriver(store="sqlite", directory=str(directory))
    try:
        created = synced.count(identity(directory))
        assert created >= 1, "the ledger's creation is not fsynced in its directory"
        assert driver.define_flow("f", FLOW).ok and driver.start("x", "f", None).ok
        assert driver.effects("x") == [{"stepId": "a", "attempt": 1}]
        assert identity(directory / "effects.jsonl") in synced, "the effect ledger's append is not fsynced"
        driver.advance_clock(1000)
        assert identity(directory / "clock.json") in synced, "the clock file is not fsynced before its rename"
        assert synced.count(identity(directory)) > created, "the clock's rename is not fsynced in its directory"
    finally:
        driver.close()


def test_a_normal_reference_store_does_not_fsync_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NORMAL is durable against a process crash only, for the store and for the files beside it."""
    synced = fsynced(monkeypatch)
    driver = ReferenceDriver(store="sqlite", directory=str(tmp_path / "store"), synchronous="NORMAL")
    try:
        assert driver.define_flow("f", FLOW).ok and driver.start("x", "f", None).ok
        driver.advance_clock(1000)
        assert driver.effects("x") and synced == []
    finally:
        driver.close()
    again = ReferenceDriver(store="sqlite", directory=str(tmp_path / "store"), synchronous="NORMAL")
    try:  # still durable across a process: the next one finds the ledger and the clock
        assert again.effects("x") == [{"stepId": "a", "attempt": 1}] and again.clock.now() == driver.clock.now()
    finally:
        again.close()
