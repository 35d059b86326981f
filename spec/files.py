"""Reading the spec's data files from the installed package."""

from __future__ import annotations

import json
import tomllib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Callable

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


def read_json(path: Traversable | Path, label: str | None = None) -> Any:
    return _read(path, label, json.loads, "JSON", json.JSONDecodeError)


def spec_label(path: Traversable | Path) -> str:
    """A short, stable name for a spec file in messages: `spec/invariants/x.toml`."""
    text = str(path)
    marker = "spec/"
    return text[text.rfind(marker):] if marker in text else text
