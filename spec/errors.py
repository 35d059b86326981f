"""Errors in the suite's own input (a spec file, a regression log)."""

from __future__ import annotations

from pydantic import ValidationError


class SpecError(Exception):
    """A spec or data file the suite cannot use; the message names file and field."""


def describe_validation_error(source: str, error: ValidationError, items_key: str | None = None,
                              raw: object = None) -> SpecError:
    """Turn a pydantic error into one message a newcomer can act on:
    `file: entry 3 (id "gate.x"), field 'adr': Input should be ...`."""
    lines = []
    for problem in error.errors():
        loc = list(problem["loc"])
        where = ""
        if items_key and len(loc) >= 2 and loc[0] == items_key and isinstance(loc[1], int):
            index = loc[1]
            ident = ""
            if isinstance(raw, dict):
                entries = raw.get(items_key)
                if isinstance(entries, list) and index < len(entries) and isinstance(entries[index], dict):
                    ident = entries[index].get("id") or entries[index].get("type") or entries[index].get("reason") or ""
            where = f"{items_key} #{index + 1}" + (f' ("{ident}")' if ident else "")
            loc = loc[2:]
        field = ".".join(str(part) for part in loc) or "(entry)"
        lines.append(f"{source}: {where + ', ' if where else ''}field '{field}': {problem['msg']}")
    return SpecError("\n".join(lines))
