"""Turning `--impl` into a driver: the reference kernel, a Python factory, a program behind the
stdio transport, or a peer library's adapter (the forms: docs/cli.md#--impl-the-implementation)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class TransportOptions:
    """How the harness treats a program behind the stdio transport (docs/protocol.md)."""

    timeout: float = 30.0
    max_line: int = 64 * 1024 * 1024
    restarts: int = 3
    validate: bool = False
    deadline: float | None = None  # time.monotonic() after which the run stops


# The reference kernel's specs: each a factory of loomcheck.reference.driver.
REFERENCE_FACTORIES = {"reference": "sqlite", "reference:sqlite": "sqlite", "reference:sqlite:full": "sqlite",
                       "reference:sqlite:normal": "sqlite_normal", "reference:memory": "memory"}


class ImplementationSpecError(Exception):
    """`--impl` names nothing we can load; the message says why and what to write."""


def peer_target(spec: str) -> str:
    """A peer's name becomes its adapter's python: target; anything else is returned as is.
    A peer whose extra is not installed is a usage error that says what to install."""
    from loomcheck.peers import PEERS

    peer = PEERS.get(spec)
    if peer is None:
        return spec
    for module in peer.requires:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            raise ImplementationSpecError(
                f"--impl {spec}: the {spec} adapter needs the package {module.split('.')[0]!r}, which is not installed; "
                f"install the extra: pip install 'loomcheck[{peer.extra}]'")
    return peer.target


def check_spec(spec: str) -> None:
    """Raise ImplementationSpecError if `spec` is not of a form we know (a usage error,
    as opposed to a kernel that fails to load, which is a finding of the run)."""
    if spec in REFERENCE_FACTORIES:
        return
    spec = peer_target(spec)
    if spec.startswith("stdio:"):
        import shlex

        try:
            argv = shlex.split(spec[len("stdio:"):])
        except ValueError as exc:
            raise ImplementationSpecError(f"--impl {spec!r}: the command cannot be split: {exc}") from None
        if not argv:
            raise ImplementationSpecError(f"--impl {spec!r}: expected stdio:COMMAND, for example stdio:'node kernel.mjs'")
        return
    if not spec.startswith("python:"):
        raise ImplementationSpecError(
            f"--impl {spec!r}: expected 'reference', 'reference:sqlite:normal', 'reference:memory', "
            f"'python:MODULE:FACTORY', 'stdio:COMMAND' "
            f"or a peer: langgraph, llamaindex, dbos, prefect")
    target, _, factory_name = spec[len("python:"):].rpartition(":")
    if not target or not factory_name:
        raise ImplementationSpecError(f"--impl {spec!r}: expected python:MODULE:FACTORY (for example python:mykernel.loomcheck:make)")


def resolve_factory(spec: str, transport: TransportOptions | None = None) -> Callable[[], Any]:
    check_spec(spec)
    spec = peer_target(spec)
    if spec.startswith("stdio:"):
        from loomcheck.protocol.client import Limits, StdioDriver

        options = transport or TransportOptions()
        limits = Limits(timeout=options.timeout, max_line=options.max_line, restarts=options.restarts)
        return lambda: StdioDriver(spec[len("stdio:"):], limits, validate=options.validate, deadline=options.deadline)
    if spec in REFERENCE_FACTORIES:
        from loomcheck.reference import driver

        return getattr(driver, REFERENCE_FACTORIES[spec])
    target, _, factory_name = spec[len("python:"):].rpartition(":")
    module = _import(target, spec)
    factory = getattr(module, factory_name, None)
    if factory is None or not callable(factory):
        raise ImplementationSpecError(f"--impl {spec!r}: {target} has no callable {factory_name!r}")
    return factory


def _import(target: str, spec: str) -> Any:
    """Their module, imported as a driver call (contract/interrupts.py): whatever its code
    raises (SystemExit included) is a message naming it; the user's signal, an interruption."""
    from loomcheck.contract import interrupts
    with interrupts.DRIVER_CALL:
        try:
            return _import_module(target, spec)
        except BaseException:
            if interrupts.requested() is not None:
                raise KeyboardInterrupt from None
            raise


def _import_module(target: str, spec: str) -> Any:
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
        except BaseException as exc:  # noqa: BLE001 - their code, our message, whatever it raises
            raise ImplementationSpecError(f"--impl {spec!r}: importing {target} raised {_shown(exc)}") from None
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except BaseException as exc:  # noqa: BLE001 - their code, our message, whatever it raises
        raise ImplementationSpecError(f"--impl {spec!r}: cannot import {target}: {_shown(exc)}") from None


def _shown(exc: BaseException) -> str:
    from loomcheck.contract.shown import shown_exception

    return shown_exception(exc)


def killable(spec: str, transport: TransportOptions | None = None) -> Any:
    """A driver whose process the harness can kill for real (docs/protocol.md): a stdio
    implementation's own program, or a Python one served by `loomcheck serve` in a
    process of its own."""
    import shlex

    from loomcheck.protocol.client import Limits, StdioDriver

    check_spec(spec)
    spec = peer_target(spec)
    options = transport or TransportOptions()
    limits = Limits(timeout=options.timeout, max_line=options.max_line, restarts=options.restarts)
    if spec.startswith("stdio:"):
        return StdioDriver(spec[len("stdio:"):], limits, validate=options.validate, deadline=options.deadline)
    # The child imports the kernel as this process did: the same import path, the current directory first.
    path = os.pathsep.join(dict.fromkeys([os.getcwd(), *(p for p in sys.path if p)]))
    command = shlex.join([sys.executable, "-m", "loomcheck", "serve", "--impl", spec])
    return StdioDriver(command, limits, validate=options.validate, deadline=options.deadline, env={"PYTHONPATH": path})


def needs_a_process(operations: list[Any]) -> bool:
    """Whether a script kills the kernel's process (real crash faults)."""
    from loomcheck.contract.script import Kill

    return any(isinstance(op, Kill) for op in operations)
