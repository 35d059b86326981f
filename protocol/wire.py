"""JSON on the wire, however deep. The suite sends values nested 1025 levels
deep (ADR 0117 D1's bound) and one 100 000 deep (spec/vectors/view-digest.json),
past what Python's recursive json module does on the main thread's stack. The
fast path is the json module as it is; a value too deep for it is (de)serialised
again in a thread with a large stack and a recursion limit to match."""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, Callable

from loomcheck.spec.files import json_headroom

DEEP_STACK_BYTES = 512 * 1024 * 1024  # virtual: only the pages a deep value touches are used
DEEP_RECURSION = 1_000_000


def dumps(value: Any) -> bytes:
    """ASCII JSON: a lone surrogate (the hostile-names corpus sends '\\ud800') has no
    UTF-8 form, but its \\u escape is JSON that every parser reads back the same."""
    def encode() -> bytes:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode("ascii")
    return _deep(encode)


def loads(data: bytes | str) -> Any:
    """Strict JSON: NaN and Infinity are not JSON."""
    return _deep(lambda: json.loads(data, parse_constant=_no_constants))


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _deep(work: Callable[[], Any]) -> Any:
    try:
        with json_headroom():
            return work()
    except RecursionError:
        pass
    outcome: list[Any] = []

    def run() -> None:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(DEEP_RECURSION)
        try:
            outcome.append(("ok", work()))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            outcome.append(("raised", exc))
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
    kind, value = outcome[0]
    if kind == "raised":
        raise value
    return value
