"""`loomcheck promote`: a run's counterexamples copied into a committed corpus of regression
logs. The example database is a cache Hypothesis may drop (an edit to the state machine changes
its key, a fixed kernel deletes what it no longer fails); a promoted log is the record, replayed
by every `loomcheck run`.

Every source is validated before anything is written: one file that is not a regression log
stops the whole command (a usage error, exit 3). A log whose operations a log already in the
folder has is skipped, and a name already taken gets a suffix."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import loomcheck
from loomcheck.spec.errors import SpecError
from loomcheck.spec.regressions import RegressionLog, dump_regression, load_regression

NAME = re.compile(r"^[a-z0-9][a-z0-9.-]*$")  # RegressionLog.name's pattern


class PromotionError(ValueError):
    """A usage error (exit 3): a source that is not a promotable regression log, a bad name or folder."""


@dataclass(frozen=True)
class Promotion:
    source: Path
    action: Literal["promoted", "duplicate"]
    target: Path  # the file written, or the log already holding the same operations


def committed_folder() -> Path:
    """spec/regressions/ of the source tree loomcheck runs from. An installed wheel is no
    place to commit to, so there --to is required."""
    root = Path(loomcheck.__file__).resolve().parent
    if not (root / "pyproject.toml").is_file():
        raise PromotionError(f"loomcheck runs from an installed package ({root}), not a source checkout: "
                             f"give --to DIR, the folder of your own committed regression logs")
    return root / "spec" / "regressions"


def sources(paths: Iterable[Path]) -> list[Path]:
    """Counterexample files: a report folder stands for the logs in its counterexamples/."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            folder = path / "counterexamples" if (path / "counterexamples").is_dir() else path
            logs = sorted(folder.glob("*.json"))
            if not logs:
                raise PromotionError(f"{path}: no counterexamples (no {path / 'counterexamples'}/*.json)")
            found.extend(logs)
        elif path.is_file():
            found.append(path)
        else:
            raise PromotionError(f"{path}: no such file or folder")
    return list(dict.fromkeys(found))


def promotable(path: Path) -> RegressionLog:
    try:
        log = load_regression(path)
    except SpecError as exc:
        raise PromotionError(f"{path} is not a valid regression log:\n{exc}") from None
    if log.origin == "adr":
        raise PromotionError(f"{path}: an ADR's own log (origin 'adr'), not a counterexample to promote")
    if log.expect is None:
        raise PromotionError(f"{path}: records no expected outcome (the reference kernel could not run it); "
                             f"record one with `loomcheck replay {path} --record-expected` first")
    return log


def operations_key(log: RegressionLog) -> str:
    """What makes two logs the same test: their operations, as written."""
    with_program = json.loads(dump_regression(log))["operations"]
    return json.dumps(with_program, sort_keys=True, ensure_ascii=True)


def existing(folder: Path) -> dict[str, Path]:
    """Operations -> file, for every log in the folder (a file that is not one is no duplicate of anything)."""
    known: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            known.setdefault(operations_key(load_regression(path)), path)
        except SpecError:
            continue
    return known


def default_name(log: RegressionLog) -> str:
    """`ADR-invariant`, as the committed logs are named: 0057-gate-i-receives-entry-i."""
    stem = log.name.replace(".", "-")
    return stem if stem.startswith(f"{log.adr}-") else f"{log.adr}-{stem}"


def free_name(folder: Path, name: str) -> str:
    if not (folder / f"{name}.json").exists():
        return name
    number = 2
    while (folder / f"{name}-{number}.json").exists():
        number += 1
    return f"{name}-{number}"


def promoted(log: RegressionLog, name: str, today: dt.date) -> RegressionLog:
    return log.model_copy(update={
        "name": name, "origin": "promoted",
        "description": f"{log.description} Promoted into the committed regression logs with `loomcheck promote` "
                       f"on {today.isoformat()}."})


def promote(paths: Iterable[Path], to: Path | None = None, name: str | None = None,
            today: dt.date | None = None) -> list[Promotion]:
    files = sources(paths)
    if name is not None and not NAME.match(name):
        raise PromotionError(f"--name {name!r}: lower case letters, digits, '.' and '-', starting with a letter or "
                             f"digit (say 0057-two-gates-one-answer)")
    if name is not None and len(files) != 1:
        raise PromotionError(f"--name names one counterexample; these are {len(files)}")
    logs = [(path, promotable(path)) for path in files]  # all checked before anything is written
    folder = to if to is not None else committed_folder()
    if folder.exists() and not folder.is_dir():
        raise PromotionError(f"--to {folder}: exists and is not a folder")
    known = existing(folder)
    done: list[Promotion] = []
    for path, log in logs:
        key = operations_key(log)
        if key in known:
            done.append(Promotion(path, "duplicate", known[key]))
            continue
        chosen = free_name(folder, name or default_name(log))
        target = folder / f"{chosen}.json"
        folder.mkdir(parents=True, exist_ok=True)
        target.write_text(dump_regression(promoted(log, chosen, today or dt.date.today())), encoding="utf-8")
        known[key] = target
        done.append(Promotion(path, "promoted", target))
    return done
