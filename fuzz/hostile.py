"""Names an outsider can send where a kernel indexes a map with a string: event
types at resume, gate names, decision ids. Each is a trap in some language:
JavaScript's prototype chain, Python's attributes and dunders, dict methods,
encodings, look-alikes of kernel types, and sheer size.

(ADR 0077, "A prototype-chain bug this surfaced": `handlers["__proto__"]`
returned Object.prototype, and the fold called a non-function.)"""

from __future__ import annotations

JAVASCRIPT = (
    "__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "isPrototypeOf",
    "propertyIsEnumerable", "toLocaleString", "__defineGetter__", "__defineSetter__", "__lookupGetter__",
    "__lookupSetter__", "then", "length", "name", "caller", "arguments", "apply", "bind", "call",
    "toJSON", "Symbol.iterator", "[object Object]", "undefined", "null", "NaN",
)
PYTHON = (
    "__class__", "__init__", "__dict__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
    "__module__", "__doc__", "__slots__", "__subclasses__", "__globals__", "__builtins__", "__reduce__",
    "__reduce_ex__", "__call__", "__new__", "__bases__", "__mro__", "mro", "__len__", "__getitem__",
    "__missing__", "__hash__", "__eq__", "__import__", "__loader__", "__spec__", "__annotations__",
    "get", "keys", "items", "values", "pop", "setdefault", "update", "copy", "clear", "fromkeys",
    "__wrapped__", "__code__", "__closure__", "func_globals",
)
ENCODING = (
    "", " ", "\x00", "a\x00b", "\t\n\r", "\u202e", "\ufeff", "\u200b", "🔥", "\U0010ffff", "é", "e\u0301",
    "\ud800", "a\udfffb", "\\", "\"", "'", "%s%n", "${jndi:ldap://127.0.0.1/a}", "../../etc/passwd", "'; DROP TABLE events; --",
)
LOOKALIKES = (  # near-misses of kernel types: must be ordinary names, not the kernel's
    "execution_resumed", "EXECUTION_RESUMED ", " EXECUTION_RESUMED", "EXECUTION\u200bRESUMED",
    "\u0415XECUTION_RESUMED",  # Cyrillic Е
    "ＥＸＥＣＵＴＩＯＮ＿ＲＥＳＵＭＥＤ",  # full width
    "EXECUTION_RESUMED\x00", "STEP_COMPLETED\n", "Execution_Started",
)
SIZE = ("x" * 10_000, "é" * 4_096)

CATEGORIES: dict[str, tuple[str, ...]] = {
    "javascript": JAVASCRIPT,
    "python": PYTHON,
    "encoding": ENCODING,
    "lookalike": LOOKALIKES,
    "size": SIZE,
}

ALL: tuple[str, ...] = tuple(name for names in CATEGORIES.values() for name in names)


# Values an outsider can send where a kernel stores JSON (a start's input, a resume's payload):
# nested past what a recursive walk survives (Python's stack ends near 1000 frames and a copy
# spends two per level, so 700 is already past it; 5000 is past most languages' JSON parsers'
# defaults), longer than a sane payload, and keyed by the names above. A kernel may refuse each
# (typed, appending nothing) or take it; it may not be left unreadable by it (ADR 0077 Context:
# "Once appended it is a permanent fold input").
DEPTHS = (700, 1_000, 5_000)
HUGE_BYTES = 2 * 1024 * 1024


def nested(kind: str, levels: int, leaf: object = 0) -> object:
    """`leaf` inside `levels` arrays (kind "array") or objects {"a": ...}, built without recursion."""
    value = leaf
    for _ in range(levels):
        value = [value] if kind == "array" else {"a": value}
    return value


def payloads() -> tuple[tuple[str, str, object], ...]:
    """(category, label, value): the hostile values, deepest last in each category."""
    deep = tuple(("deep", f"{kind}s nested {levels} deep", nested(kind, levels))
                 for levels in DEPTHS for kind in ("array", "object"))
    keyed = ("keys", "an object keyed by every JavaScript and Python name above",
             {name: {name: True} for name in JAVASCRIPT + PYTHON})
    return deep + (("huge", f"a string of {HUGE_BYTES} bytes", "x" * HUGE_BYTES), keyed)
