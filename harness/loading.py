"""Turning `--impl` into a driver.

    reference                  the reference kernel on its embedded SQLite store (default)
    reference:memory           the reference kernel on the in-memory store
    python:MODULE:FACTORY      FACTORY() from an importable module (the current
                               directory is on the import path, as with `python -m`)
    python:PATH.py:FACTORY     FACTORY() from a Python file
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable


class ImplementationSpecError(Exception):
    """`--impl` names nothing we can load; the message says why and what to write."""


def check_spec(spec: str) -> None:
    """Raise ImplementationSpecError if `spec` is not of a form we know (a usage error,
    as opposed to a kernel that fails to load, which is a finding of the run)."""
    if spec in ("reference", "reference:sqlite", "reference:memory"):
        return
    if not spec.startswith("python:"):
        raise ImplementationSpecError(
            f"--impl {spec!r}: expected 'reference', 'reference:memory' or 'python:MODULE:FACTORY'")
    target, _, factory_name = spec[len("python:"):].rpartition(":")
    if not target or not factory_name:
        raise ImplementationSpecError(f"--impl {spec!r}: expected python:MODULE:FACTORY (for example python:mykernel.loomcheck:make)")


def resolve_factory(spec: str) -> Callable[[], Any]:
    check_spec(spec)
    if spec in ("reference", "reference:sqlite"):
        from loomcheck.reference.driver import sqlite

        return sqlite
    if spec == "reference:memory":
        from loomcheck.reference.driver import memory

        return memory
    target, _, factory_name = spec[len("python:"):].rpartition(":")
    module = _import(target, spec)
    factory = getattr(module, factory_name, None)
    if factory is None or not callable(factory):
        raise ImplementationSpecError(f"--impl {spec!r}: {target} has no callable {factory_name!r}")
    return factory


def _import(target: str, spec: str) -> Any:
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise ImplementationSpecError(f"--impl {spec!r}: no file {target}")
        name = f"loomcheck_impl_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImplementationSpecError(f"--impl {spec!r}: cannot load {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - their code, our message
            raise ImplementationSpecError(f"--impl {spec!r}: importing {target} raised {type(exc).__name__}: {exc}") from None
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except Exception as exc:  # noqa: BLE001 - their code, our message
        raise ImplementationSpecError(f"--impl {spec!r}: cannot import {target}: {type(exc).__name__}: {exc}") from None
