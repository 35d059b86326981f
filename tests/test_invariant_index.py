"""The per-invariant index (spec/invariant-index.json) and the links docs/invariants.md makes of
it: the committed index is what the checkout gives now (a moved predicate, a new regression log,
mutant or decision tag makes it stale), and every link leads to a file and a line that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from loomcheck.reports.invariant_index import InvariantIndex, check_place, decision_names, tags_in
from loomcheck.reports.regenerate import DOC, INDEX, ROOT, derived_outputs
from loomcheck.spec.catalogue import load_catalogue
from markdown_links import broken_links, links

REGENERATE = "run `.venv/bin/python -m loomcheck.reports.regenerate --derived-only` and commit the result"


@pytest.fixture(scope="module")
def index() -> InvariantIndex:
    return InvariantIndex.model_validate_json(INDEX.read_text(encoding="utf-8"))


def test_committed_index_is_fresh() -> None:
    assert INDEX.read_text(encoding="utf-8") == derived_outputs()[INDEX], f"{INDEX.name} is stale: {REGENERATE}"


def test_the_index_has_every_invariant_and_only_those(index: InvariantIndex) -> None:
    assert list(index.invariants) == load_catalogue().ids


def test_every_invariant_is_judged_and_catches_a_mutant(index: InvariantIndex) -> None:
    unjudged = [i for i, entry in index.invariants.items() if not entry.judges]
    uncaught = [i for i, entry in index.invariants.items() if not entry.mutants]
    assert not unjudged and not uncaught, (unjudged, uncaught)


def test_a_predicate_is_placed_on_its_registration(index: InvariantIndex) -> None:
    for invariant_id, entry in index.invariants.items():
        for judge in entry.judges:
            if judge.check == "predicate":
                assert judge.place.file.startswith("properties/") and judge.place.line is not None
                line = (ROOT / judge.place.file).read_text(encoding="utf-8").splitlines()[judge.place.line - 1]
                assert line.lstrip().startswith("@predicate("), (invariant_id, judge.place, line)


def test_every_link_of_the_document_reaches_a_file_and_line() -> None:
    assert broken_links(DOC) == []
    assert any("#L" in target for target in links(DOC.read_text(encoding="utf-8")))


def test_each_invariant_links_what_judges_shows_and_implements_it(index: InvariantIndex) -> None:
    text = DOC.read_text(encoding="utf-8")
    for invariant_id, entry in index.invariants.items():
        section = text.split(f'<a id="{invariant_id}"></a>', 1)[1].split("<a id=", 1)[0]
        shown = set(links(section))
        for judge in entry.judges:
            anchor = f"#L{judge.place.line}" if judge.place.line is not None else ""
            assert f"../{judge.place.file}{anchor}" in shown, (invariant_id, judge)
        for file in [*entry.regressions, *(c.file for c in entry.counterexamples), *(m.file for m in entry.mutants)]:
            assert f"../{file}" in shown, (invariant_id, file)
        for place in entry.reference:
            assert f"../{place.file}#L{place.line}" in shown, (invariant_id, place)


@pytest.mark.parametrize("line,cited", [
    ("# ADR 0104 D1", [("0104", "D1")]),
    ("(ADR 0117 D2, D3)", [("0117", "D2"), ("0117", "D3")]),
    ("as ADR 0117 D2 and D3 say", [("0117", "D2"), ("0117", "D3")]),
    ("(ADR 0104 D2, amendment R1a): the", [("0104", "D2"), ("0104", "R1a")]),
    ("ADR 0077 D3, ADR 0104 D4", [("0077", "D3"), ("0104", "D4")]),
    ('(ADR 0104 D1, "Why null")', [("0104", "D1")]),
    ("ADR 0077 Context: a resume payload", [("0077", "Context")]),
    ("ADR 0104 D10 and ADR 0104", []),
    ("ADR 0056", []),
])
def test_a_decision_tag_is_read_as_written(line: str, cited: list[tuple[str, str]]) -> None:
    assert list(tags_in(line, decision_names(load_catalogue()))) == cited


def test_a_check_the_index_cannot_place_is_an_error() -> None:
    with pytest.raises(ValueError, match="no code for the check"):
        check_place(ROOT, "corpus:nothing-such")


def test_a_link_past_the_end_of_a_file_is_broken(tmp_path: Path) -> None:
    (tmp_path / "code.py").write_text("one\ntwo\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](code.py#L2) [b](code.py#L3) [c](gone.py) [d](#here) [e](#nowhere) `[f](gone.py)`\n\n# Here\n",
                    encoding="utf-8")
    assert broken_links(page) == ["page.md: code.py#L3: past the end of the file", "page.md: gone.py: no such file",
                                  "page.md: #nowhere: no such anchor"]
