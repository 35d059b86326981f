"""JSON data across the driver boundary, both ways: `plain` reads an implementation's answer
as JSON data within bounds, `handed` copies what the harness hands it. The bounds and why:
docs/contract.md, "JSON across the boundary"."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from loomcheck.contract.shown import type_name as _type_name

JSON = Any
MAX_DEPTH = 256
ENVELOPE = 64
MAX_ITEMS = 4_000_000
MAX_TEXT = 64 * 1024 * 1024
MAX_INT_BITS = 13_000


@dataclass(frozen=True)
class Bounds:
    depth: int = MAX_DEPTH
    items: int = MAX_ITEMS
    text: int = MAX_TEXT
    int_bits: int = MAX_INT_BITS

    def beyond(self, handed_depth: int) -> Bounds:
        """The bounds once a value `handed_depth` deep has been handed: an answer may hold it."""
        wanted = handed_depth + ENVELOPE
        return self if wanted <= self.depth else replace(self, depth=wanted)


BOUNDS = Bounds()


class NotJsonData(ValueError):
    """An answer that is not JSON data within the bounds: `where` is the JSON pointer
    (RFC 6901) of the offending part, "" for the whole answer."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{problem} at {_short(where)}" if where else problem)


_Link = tuple[Any, Any] | None  # (parent link, member name or index): a path built only when needed
_EXIT = object()                # a frame marking the end of a container's members (cycle detection)


def plain(value: JSON, bounds: Bounds = BOUNDS) -> JSON:
    """A plain copy of `value`, or NotJsonData. Exact types in, exact types out."""
    root: list[JSON] = [None]
    # (value, the container to put its copy in, the key there, depth of value's container, path)
    stack: list[tuple[Any, Any, Any, int, _Link]] = [(value, root, 0, 0, None)]
    open_ids: set[int] = set()  # the containers being copied: one met again inside itself is a cycle
    items = text = 0
    while stack:
        node, parent, key, level, link = stack.pop()
        if node is _EXIT:
            open_ids.discard(key)
            continue
        kind = type(node)
        if not (kind is dict or kind is list or issubclass(kind, (dict, list))):
            parent[key], size = _scalar(node, kind, link, bounds)  # the top, or one the fast path below left
            items, text = items + 1, text + size
        else:
            if id(node) in open_ids:
                raise NotJsonData(_pointer(link), "the value contains itself")
            if level + 1 > bounds.depth:
                raise NotJsonData(_pointer(link), f"nested deeper than {bounds.depth} arrays/objects")
            open_ids.add(id(node))
            stack.append((_EXIT, None, id(node), level, link))
            # An exact list or dict is read as it is; a subclass through the base type's own methods.
            is_list = kind is list or kind is not dict and issubclass(kind, list)
            members = (enumerate(node) if kind is list else node.items() if kind is dict
                       else _members(node, kind, link))
            parent[key] = copy = [None] * len(node if kind is list else list.copy(node)) if is_list else {}
            for name, child in members:
                if not is_list and type(name) is not str:
                    name = _name(name, link)
                # Exact scalars, most of any answer, are copied here rather than stacked.
                ck = type(child)
                if ck is str:
                    text += len(child)
                    copy[name] = child
                elif child is None or ck is bool or ck is int and child.bit_length() <= bounds.int_bits \
                        or ck is float and math.isfinite(child):
                    copy[name] = child
                else:
                    copy[name] = None  # its place kept: a dict's members stay in their order
                    stack.append((child, copy, name, level + 1, (link, name)))
                    continue
                items += 1
            items += 1
        if items > bounds.items:
            raise NotJsonData(_pointer(link), f"more than {bounds.items} values")
        if text > bounds.text:
            raise NotJsonData(_pointer(link), f"more than {bounds.text} characters of text")
    return root[0]


def _members(node: Any, kind: type, link: _Link) -> list[tuple[Any, Any]]:
    """(index or name, member) of a subclass of list or dict, read through the base type's methods."""
    if issubclass(kind, list):
        return list(enumerate(list.copy(node)))
    return list(dict.items(dict.copy(node)))


def _name(name: Any, link: _Link) -> str:
    """A member name that is not an exact str: a subclass's text, or NotJsonData."""
    if issubclass(type(name), str):
        return str.__str__(name)
    raise NotJsonData(_pointer(link), f"a member name of type {_type_name(type(name))}, not a string")


def _scalar(node: Any, kind: type, link: _Link, bounds: Bounds) -> tuple[JSON, int]:
    """A scalar as its exact base type, with the characters of text it counts for."""
    if node is None or kind is bool:
        return node, 0
    if issubclass(kind, str):
        node = str.__str__(node)  # a subclass's own __str__ is never called
        return node, len(node)
    if issubclass(kind, int):
        node = int.__int__(node)
        if node.bit_length() > bounds.int_bits:
            raise NotJsonData(_pointer(link), f"an integer of more than {bounds.int_bits} bits")
        return node, 0
    if issubclass(kind, float):
        node = float.__float__(node)
        if not math.isfinite(node):
            raise NotJsonData(_pointer(link), f"{node!r} is not a JSON number")
        return node, 0
    raise NotJsonData(_pointer(link), f"a value of type {_type_name(kind)} is not JSON data")


def handed(value: JSON) -> tuple[JSON, int]:
    """A deep copy of the harness's own JSON value, to hand to an implementation, and how many
    arrays/objects deep it nests: lists and dicts copied at every depth, without recursion;
    scalars (immutable) shared."""
    if not isinstance(value, (list, dict, tuple)):
        return value, 0
    root: list[JSON] = [None]
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 1)]
    deepest = 1
    while stack:
        node, parent, key, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, tuple):
            members = [handed(child) for child in node]  # rare, shallow: a tuple holds few members
            parent[key] = tuple(copy for copy, _ in members)
            deepest = max([deepest, *(level + d for _, d in members)])
            continue
        members = node.items() if isinstance(node, dict) else enumerate(node)
        parent[key] = copy = {} if isinstance(node, dict) else [None] * len(node)
        for name, child in members:
            copy[name] = child
            if isinstance(child, (list, dict, tuple)):
                stack.append((child, copy, name, level + 1))
    return root[0], deepest


def _short(pointer: str, limit: int = 120) -> str:
    """A pointer 1 000 levels deep, shown by its two ends."""
    if len(pointer) <= limit:
        return pointer
    return f"{pointer[:limit // 2]}...({len(pointer) - limit} characters)...{pointer[-(limit // 2):]}"


def _pointer(link: _Link) -> str:
    parts: list[str] = []
    while link is not None:
        link, part = link
        parts.append(str(part).replace("~", "~0").replace("/", "~1"))
    return "".join("/" + part for part in reversed(parts))

