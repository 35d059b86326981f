"""Reading the spec's data files from the installed package."""

from __future__ import annotations

import json
import sys
import threading
import tomllib
from contextlib import contextmanager
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

from loomcheck.spec.errors import SpecError, describe_validation_error

SPEC_ROOT: Traversable = files("loomcheck.spec")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
DEEP_STACK_BYTES = 512 * 1024 * 1024  # virtual: only the pages a deep value touches are used
DEEP_RECURSION = 1_000_000


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


def load_spec_model(name: str, model: type[M], items_key: str) -> M:
    """A TOML file of the spec read into its model; a broken one is a SpecError naming the
    entry (`items_key`) and the field."""
    path = SPEC_ROOT / name
    raw = read_toml(path, spec_label(path))
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise describe_validation_error(spec_label(path), exc, items_key, raw) from None


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


def deep_json(work: Callable[[], T]) -> T:
    """`work()` (a json dump or load) at any depth: with json_headroom here, and if a value nests
    deeper than that (the hostile-payloads corpus sends one 5 000 deep, the bound-answers corpus a
    view 100 000 deep), again on a thread whose stack and recursion limit are large enough."""
    try:
        with json_headroom():
            return work()
    except RecursionError:
        pass
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(DEEP_RECURSION)
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome.append((False, exc))
        finally:
            sys.setrecursionlimit(previous)

    size = threading.stack_size()
    threading.stack_size(DEEP_STACK_BYTES)
    try:
        thread = threading.Thread(target=run, name="deep-json")
        thread.start()
    finally:
        threading.stack_size(size)
    thread.join()
    done, value = outcome[0]
    if not done:
        raise value
    return value


def deep_loads(text: str) -> Any:
    return deep_json(lambda: json.loads(text))


def read_json(path: Traversable | Path, label: str | None = None) -> Any:
    return _read(path, label, deep_loads, "JSON", json.JSONDecodeError)


def spec_label(path: Traversable | Path) -> str:
    """A short, stable name for a spec file in messages: `spec/invariants/x.toml`."""
    text = str(path)
    marker = "spec/"
    return text[text.rfind(marker):] if marker in text else text
