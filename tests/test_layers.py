"""Imports point one way, down the layers the README's layout table writes down, and no
module imports itself back through others."""

from __future__ import annotations

from import_graph import back_edges, cycles, graph, layers, modules, place_of


def test_every_folder_has_a_layer() -> None:
    order = layers()
    unplaced = sorted({place_of(m) for m in modules()} - set(order))
    assert not unplaced, f"folders the README's layout table does not place: {unplaced}"


def test_imports_point_down() -> None:
    wrong = back_edges(graph(), layers())
    assert not wrong, "imports that run up or sideways:\n" + "\n".join(wrong)


def test_no_import_cycle() -> None:
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_see_a_wrong_import() -> None:
    """A seeded graph: spec importing run runs up; two modules importing each other are a cycle."""
    order = {"spec": 0, "run": 8}
    edges = {"loomcheck.spec.files": {"loomcheck.run.runner"}, "loomcheck.run.runner": {"loomcheck.run.loading"},
             "loomcheck.run.loading": {"loomcheck.run.runner"}}
    assert back_edges(edges, order) == [
        "loomcheck.spec.files (layer 0, spec/) imports loomcheck.run.runner (layer 8, run/)"]
    assert cycles(edges) == [["loomcheck.run.loading", "loomcheck.run.runner"]]


def test_the_graph_reads_every_kind_of_import() -> None:
    """Relative, nested and `from package import module` imports all reach the graph."""
    edges = graph()
    assert "loomcheck.properties.answers" in edges["loomcheck.properties.checks"]  # from package import module
    assert "loomcheck.contract.session" in edges["loomcheck.properties.registry"]
