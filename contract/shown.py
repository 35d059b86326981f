"""Text about what an implementation gave the harness, made without trusting it: an
exception whose __str__ or __repr__ raises (or returns no string, or a novel), a value
nested past the recursion limit or containing itself. Pure; never raises."""

from __future__ import annotations

from typing import Any

LIMIT = 1000  # characters of an exception's own text kept in a message


def shown_exception(exc: BaseException) -> str:
    """`TypeName: its text`, or `TypeName` when it has none, or
    `<TypeName whose str() raised OtherType>` when its text cannot be had (str() raises
    TypeError for a __str__ that returns no string)."""
    name = type_name(type(exc))
    try:
        text = str.__str__(str(exc))  # a subclass of str returned: its own methods are not called again
    except BaseException as failure:  # noqa: BLE001 - whatever its __str__ raises, this must not
        return f"<{name} whose str() raised {type_name(type(failure))}>"
    if len(text) > LIMIT:
        text = text[:LIMIT] + f"... ({len(text) - LIMIT} more characters)"
    return f"{name}: {text}" if text else name


def type_name(kind: type) -> str:
    """A class's own name, whatever its metaclass claims (a property there could raise)."""
    try:
        name = type.__dict__["__name__"].__get__(kind)
    except BaseException:  # noqa: BLE001
        return "object"
    return str.__str__(name) if isinstance(name, str) else "object"


def brief(value: Any, limit: int = 80) -> str:
    """JSON-like text of a value, cut at `limit` characters, without recursion and without
    calling the value's methods: a container is walked only until the text is long enough,
    anything that is not JSON data is shown as <a TypeName>."""
    out: list[str] = []
    size = 0
    stack: list[Any] = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, _Raw):
            piece = item.text
        elif item is None or type(item) is bool:
            piece = {None: "null", True: "true", False: "false"}[item]
        elif type(item) in (int, float):
            piece = repr(item) if type(item) is float or item.bit_length() < 200 else "<a very long int>"
        elif type(item) is str:
            piece = _quoted(item[: limit + 1])
        elif type(item) is list:
            stack.append(_Raw("]"))
            for index in range(min(len(item), limit) - 1, -1, -1):
                stack.append(item[index])
                if index:
                    stack.append(_Raw(","))
            piece = "["
        elif type(item) is dict:
            stack.append(_Raw("}"))
            members = list(dict.items(item))[:limit]
            for index in range(len(members) - 1, -1, -1):
                name, child = members[index]
                stack.append(child)
                stack.append(_Raw((_quoted(name[: limit + 1]) if type(name) is str else "<a key>") + ":"))
                if index:
                    stack.append(_Raw(","))
            piece = "{"
        else:
            piece = f"<a {type_name(type(item))}>"
        out.append(piece)
        size += len(piece)
    text = "".join(out)
    return text if len(text) <= limit and not stack else text[: max(limit - 3, 0)] + "..."


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
