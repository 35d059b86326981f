"""Reading the spec's data files from the installed package."""

from __future__ import annotations

import json
import sys
import tomllib
from contextlib import contextmanager
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Callable, Iterator

from loomcheck.spec.errors import SpecError

SPEC_ROOT: Traversable = files("loomcheck.spec")


def _read(path: Traversable | Path, label: str | None, parse: Callable[[str], Any], kind: str,
          error: type[Exception]) -> Any:
    label = label or str(path)
    try:
        return parse(path.read_text(encoding="utf-8"))
    except error as exc:
        raise SpecError(f"{label}: not valid {kind}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{label}: cannot be read: {exc}") from None


def read_toml(path: Traversable | Path, label: str | None = None) -> dict[str, Any]:
    return _read(path, label, tomllib.loads, "TOML", tomllib.TOMLDecodeError)


@contextmanager
def json_headroom(levels: int = 4_000) -> Iterator[None]:
    """Python's json module recurses once per nesting level and stops near 1000,
    below the 1024 levels ADR 0117 D1 requires a view digest to accept: regression
    logs that carry such a view are read and written with this much headroom."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, previous + levels))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def deep_loads(text: str) -> Any:
    with json_headroom():
        return json.loads(text)


def read_json(path: Traversable | Path, label: str | None = None) -> Any:
    return _read(path, label, deep_loads, "JSON", json.JSONDecodeError)


def spec_label(path: Traversable | Path) -> str:
    """A short, stable name for a spec file in messages: `spec/invariants/x.toml`."""
    text = str(path)
    marker = "spec/"
    return text[text.rfind(marker):] if marker in text else text
