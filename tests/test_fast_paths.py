"""The reference's fast paths (for speed: bench/) equal the plain code they replace.

- `events.loads` (orjson, with the stdlib for integers beyond 64 bits) reads back
  exactly what `events.dumps` wrote, as `json.loads` does.
- `events.copy_json` is a deep copy: equal, and sharing no dict or list.
- `stores.base.stream` (paged range reads) yields what `store.read` returns, on
  both stores, whatever the page size, after retention too.
- `Runtime.advanced` (the state moved past an operation's own appends, without
  re-reading the log) equals a fresh fold of the log after every run.
Each would be a silent change of the kernel's behaviour if it were wrong.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loomcheck.machine.strategies import programs
from loomcheck.reference.driver import ReferenceDriver
from loomcheck.reference.events import copy_json, dumps, loads
from loomcheck.reference.runtime import Driven, Runtime
from loomcheck.reference.stores.base import stream
from loomcheck.reference.stores.memory import InMemoryEventStore
from loomcheck.reference.stores.sqlite import SqliteEventStore

JSON = Any
BIG = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from([2**63, -(2**63) - 1, 2**64, 2**64 - 1, 10**19])
json_values = st.recursive(
    st.none() | st.booleans() | BIG | st.floats(allow_nan=False, allow_infinity=False)
    | st.text() .filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))
    | st.from_regex(r"[0-9]{15,25}", fullmatch=True),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12)


def same(a: JSON, b: JSON) -> bool:
    """Equal and of the same JSON types all the way down (1 == 1.0 == True in Python)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


@given(json_values)
def test_loads_reads_back_exactly_what_dumps_wrote(value: JSON) -> None:
    text = dumps(value)
    assert same(loads(text), json.loads(text))
    assert same(loads(text.encode("utf-8")), json.loads(text))


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**30, [1, {"n": 123456789012345678901234567890}]])
def test_integers_beyond_64_bits_stay_integers(value: JSON) -> None:
    """orjson alone would read these as floats; the reader must not."""
    assert same(loads(dumps(value)), value)


def test_loads_raises_the_stdlibs_error_on_bad_text() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads("{bad")


def containers(value: JSON) -> Iterator[int]:
    if isinstance(value, (dict, list)):
        yield id(value)
        for item in value.values() if isinstance(value, dict) else value:
            yield from containers(item)


@given(json_values)
def test_copy_json_is_a_deep_copy(value: JSON) -> None:
    copied = copy_json(value)
    assert same(copied, value)
    assert not set(containers(copied)) & set(containers(value))


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made = InMemoryEventStore() if request.param == "memory" else SqliteEventStore(tmp_path / "s.sqlite")
    yield made
    made.close()


@pytest.mark.parametrize("page", [1, 3, 4096])
@pytest.mark.parametrize("retained", [0, 1, 5, 9])
def test_stream_yields_what_read_returns(store: Any, page: int, retained: int) -> None:
    store.append("x", 1, [("t", {"n": i}) for i in range(10)])
    store.append("y", 1, [("t", i) for i in range(3)])  # another execution must not leak in
    if retained:
        store.truncate_prefix("x", retained, {"sequence": retained})
    for after in (0, 2, 7, 10, 12):
        assert list(stream(store, "x", after=after, page=page)) == store.read("x", after=after)
    assert list(stream(store, "nobody", page=page)) == []


class CheckingRuntime(Runtime):
    """Every run's final state, as `advanced` computed it, against a fresh fold of the store."""

    def drive(self, execution_id: str, loaded: Any = None) -> Driven:
        driven = super().drive(execution_id, loaded)
        assert driven.state.to_json() == self.state(execution_id).to_json()
        return driven


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(min_gates=1), st.lists(st.sampled_from(["answer", "recover", "wrong"]), max_size=6))
def test_the_state_after_each_run_equals_a_fresh_fold(program: dict[str, Any], operations: list[str]) -> None:
    driver = ReferenceDriver(store="memory", runtime_class=CheckingRuntime)
    try:
        assert driver.define_flow("f", program).ok
        driver.start("x", "f", {"n": 1})
        for number, operation in enumerate(operations):
            parked = (driver.read_state("x").get("suspendedOn") or {}).get("on")
            if operation == "recover":
                driver.recover("x")
            elif operation == "wrong" or parked is None:
                driver.resume("x", "nobody", {"n": number})
            else:
                driver.resume("x", parked, {"n": number})
    finally:
        driver.close()
