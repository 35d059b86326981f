"""Hostile subjects over stdio. Answers are read as bounded data: strict UTF-8,
nested at most 256 deep, at most so many values, whatever the line holds."""

from __future__ import annotations

import pytest

from loomcheck.protocol import wire


# -- answers are bounded data before anything looks at them --------------------------------------
@pytest.mark.parametrize("levels", [255, 256, 257, 2_000, 100_000, 5_000_000])
def test_an_answer_is_parsed_within_a_bound_on_depth(levels: int) -> None:
    line = b"[" * levels + b"]" * levels + b"\n"
    if levels <= 256:
        value = wire.loads_answer(line, max_depth=256, max_values=10 ** 6)
        for _ in range(levels - 1):
            value = value[0]
        assert value == []
    else:
        with pytest.raises(wire.TooDeep, match="nested deeper than 256 arrays/objects"):
            wire.loads_answer(line, max_depth=256, max_values=10 ** 6)


@pytest.mark.parametrize("line,says", [
    ('{"id":1,"result":null}\n'.encode("utf-16-le"), "holds NUL bytes"),
    ('{"id":1,"result":"é"}\n'.encode("utf-16-le"), "not UTF-8"),
    (b"\xfe\xff" + '{"id":1}\n'.encode("utf-16-be"), "not UTF-8"),
    (b'\xef\xbb\xbf{"id":1,"result":null}\n', "byte order mark"),
    (b'{"id":1,"result":"\xc3"}\n', "not UTF-8"),
], ids=["utf-16-le", "utf-16-le-accented", "utf-16-bom", "utf-8-bom", "truncated-utf-8"])
def test_an_answer_is_strict_utf8(line: bytes, says: str) -> None:
    with pytest.raises(ValueError, match=says) as raised:
        wire.loads_answer(line, max_depth=256, max_values=10 ** 6)
    assert not isinstance(raised.value, wire.TooDeep)


def test_an_answer_with_too_many_values_is_refused() -> None:
    line = b"[" + b",".join([b"0"] * 1_001) + b"]\n"
    with pytest.raises(wire.TooDeep, match="more than 1000 JSON values"):
        wire.loads_answer(line, max_depth=256, max_values=1_000)
    assert len(wire.loads_answer(line, max_depth=256, max_values=1_002)) == 1_001
