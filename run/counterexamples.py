"""The counterexamples one run writes under its report folder (`counterexamples/NAME.json`):
each a regression log whose `expect` is what the reference kernel does with the same
operations, so `loomcheck replay` and `loomcheck promote` take it as it is."""

from __future__ import annotations

from pathlib import Path

from loomcheck import __version__
from loomcheck.contract.script import Operation, to_json
from loomcheck.run.loading import TransportOptions
from loomcheck.run.replay import expectation_of, run_on_reference
from loomcheck.spec.regressions import Found, RegressionLog, dump_regression


class CounterexampleFiles:
    """The files of one run: the same failure found again keeps its one file."""

    def __init__(self, directory: Path, impl: str, transport: TransportOptions) -> None:
        self.directory = directory
        self.impl = impl
        self.transport = transport
        self._written: dict[str, str] = {}  # a counterexample's text -> the file this run wrote it to

    def write(self, name: str, operations: list[Operation], message: str | None, error: str | None, *,
              adr: str, invariants: list[str], one_file: bool) -> str | None:
        """The file holding `operations` as a counterexample of `name` (an invariant, or a kind of
        finding), or None for a failure that shrank to nothing. `one_file`: an invariant keeps one
        file; several implementation errors in one run each keep their own."""
        if not operations:  # a failure that did not reproduce shrinks to nothing: there is no log to write
            return None
        expected = run_on_reference(operations, self.transport)
        log = RegressionLog.model_validate({
            "name": name, "adr": adr, "origin": "counterexample",
            "description": f"Shrunk counterexample found by loomcheck {__version__} against {self.impl}; "
                           f"'expect' is what the reference kernel does with the same operations.",
            "invariants": invariants,
            "operations": [to_json(op) for op in operations],
            "expect": expectation_of(expected).model_dump() if expected.failure is None else None,
            "found": Found(invariant=name, message=message or error or "", implementation=self.impl).model_dump(),
        })
        # Keyed by the file's text: a view nested past JSON's recursion limit is written fine there.
        key = dump_regression(log)
        if key in self._written:
            return self._written[key]
        taken = set() if one_file else set(self._written.values())
        path = next(p for n in range(1, len(taken) + 2)
                    for p in [self.directory / "counterexamples" / (f"{name}.json" if n == 1 else f"{name}-{n}.json")]
                    if str(p) not in taken)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(key, encoding="utf-8")
        self._written[key] = str(path)
        return str(path)
