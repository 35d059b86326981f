"""State transforms (ADR 0056 D1): the `transformState` a resumeAs may carry.

A transform is code, and flow programs are data, so the suite names transforms
from a registry every kernel's driver provides. `transformState` is one JSON
object, `{"name": ..., ...arguments}`; the built-ins are:

| name      | arguments            | outcome on the folded input `i`                                   |
| --------- | -------------------- | ----------------------------------------------------------------- |
| `rename`  | `from`, `to` (text)  | `i` an object: `from` moved to `to` (absent: `i` unchanged)       |
| `default` | `field`, `value`     | `i` an object: `field` added with `value` when absent             |
| `wrap`    | `key` (text)         | `{key: i}`: deliberately not idempotent, so a re-run shows        |
| `parse`   | none                 | `i` parsed by the TARGET flow's inputSchema (a Zod transform's parse, defaults filled in) |
| `fail`    | `message` (text)     | raises                                                            |
| `nothing` | none                 | returns nothing (JavaScript's undefined), which is not an input    |

`rename` and `default` raise on an input that is not an object; `parse` raises
when the input does not match, or the target declares no inputSchema.

What a kernel does with a transform (ADR 0056):
- it is applied at migration time to the FOLDED `_input` (which an earlier
  migration may have replaced), and its outcome is recorded as `migratedInput`
  on EXECUTION_MIGRATED (D1); replay folds the recorded value and never runs the
  transform again;
- one that raises or returns nothing refuses the migration with a
  StateMigrationError before anything is appended (D3): reasons
  `transform-failed` and `transform-returned-nothing`; a name the registry does
  not hold, or arguments that do not fit it, `unknown-transform`;
- no transform at all: EXECUTION_MIGRATED is exactly what it was before 1.15.0.

The order of a resumeAs's checks: the resume's own (ADR 0104 D1, ADR 0077 D4),
then the transform, then the target's input contract (`input-contract`: a target
with validateInput must accept the input it will run on), then the append."""

from __future__ import annotations

# What each built-in takes besides its name: "text" or "json"; "?" marks an optional one.
ARGUMENTS: dict[str, dict[str, str]] = {
    "rename": {"from": "text", "to": "text"},
    "default": {"field": "text", "value": "json?"},
    "wrap": {"key": "text"},
    "parse": {},
    "fail": {"message": "text?"},
    "nothing": {},
}


def argument_problem(spec: object) -> str | None:
    """Why a transformState names no built-in or does not fit it (unknown-transform),
    or None. Own names only: `__proto__` is an unknown transform."""
    name = spec.get("name") if isinstance(spec, dict) else None
    if type(name) is not str or name not in ARGUMENTS:
        return f"no transform named {name!r} is registered (built-ins: {', '.join(ARGUMENTS)})"
    wanted = ARGUMENTS[name]
    for arg in spec:
        if arg != "name" and arg not in wanted:
            return f"transform {name!r} takes no {arg!r}"
    for arg, kind in wanted.items():
        if arg not in spec:
            if not kind.endswith("?"):
                return f"transform {name!r} needs {arg!r}"
        elif kind.startswith("text") and type(spec[arg]) is not str:
            return f"transform {name!r}: {arg!r} must be text"
    return None
