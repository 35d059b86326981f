"""State transforms (ADR 0056 D1): the registry of `transformState`s a resumeAs may carry, each
`{"name", ...arguments}`. The built-ins and what a kernel does with one: docs/spec-data.md,
"State transforms"."""

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
