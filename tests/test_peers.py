"""The peer adapters' shared ground, without any peer installed: the table of peers, the
manifests they ship (which must never let the adapter's own work pass for the peer's), a
clear message when a peer's extra is missing, and the witness."""

from __future__ import annotations

import importlib.util
from importlib.resources import files
from pathlib import Path

import pytest

from loomcheck.peers import PEERS
from loomcheck.peers.base import GUARD_JUDGES
from loomcheck.peers.reproducer import render
from loomcheck.peers.witness import Witness
from loomcheck.run.loading import ImplementationSpecError, check_spec
from loomcheck.run.manifest import load_manifest

WITNESS_MADE = ("log.append-only", "resume.accepted-records-answer")


@pytest.mark.parametrize("name", sorted(PEERS))
def test_every_peer_ships_a_manifest_that_does_not_credit_the_peer_with_the_adapters_work(name: str) -> None:
    peer = PEERS[name]
    manifest = load_manifest(Path(str(files("loomcheck.peers") / peer.manifest)))
    excused = {e.invariant for e in manifest.not_applicable}
    # The log is the adapter's witness: these two hold by its construction, for every peer.
    assert set(WITNESS_MADE) <= excused, set(WITNESS_MADE) - excused
    if peer.guarded:
        # Guarded: the adapter's own ingress checks decide these, so they judge nothing of the peer.
        judged = set(GUARD_JUDGES) - excused - {e.invariant for e in manifest.expected}
        assert not judged, f"{name}: a guarded run would credit the peer with the guard's checks: {sorted(judged)}"
    for entry in manifest.not_applicable + manifest.expected:
        assert entry.reason and "TODO" not in entry.reason, entry


@pytest.mark.parametrize("name", sorted(PEERS))
def test_a_missing_extra_is_a_usage_error_that_says_what_to_install(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    missing = {module.split(".")[0] for module in PEERS[name].requires}
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n in missing else real(n, *a))
    with pytest.raises(ImplementationSpecError) as raised:
        check_spec(name)
    assert f"pip install 'loomcheck[{PEERS[name].extra}]'" in str(raised.value)


def test_the_witness_keeps_hostile_names_and_dedupes_facts(tmp_path: Path) -> None:
    witness = Witness(tmp_path / "witness.db")
    witness.begin("\ud800x", "f\udfff")
    witness.append("\ud800x", "go\ud800", {"k\ud800": "v"})
    assert witness.emit("\ud800x", "app.note", {"a": 1, "b": 2})
    assert not witness.emit("\ud800x", "app.note", {"b": 2, "a": 1})  # the same fact, key order aside
    witness.close()
    again = Witness(tmp_path / "witness.db")  # a durable witness survives its process
    assert again.executions() == ["\ud800x"] and again.flow_of("\ud800x") == "f\udfff"
    assert again.log("\ud800x") == [{"seq": 1, "type": "go\ud800", "payload": {"k\ud800": "v"}},
                                    {"seq": 2, "type": "app.note", "payload": {"a": 1, "b": 2}}]


def test_the_renderer_keeps_a_glue_module_whole_and_refuses_what_a_script_cannot_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reproducer is the glue's own source: less its docstring and its imports of the other
    rendered modules, nothing else dropped; an import of the rest of loomcheck, or one name
    defined two ways, would make a script that is not the adapter, so it is refused."""
    package = tmp_path / "gluepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "base.py").write_text('"""The base."""\nimport json\n\nX = json.dumps(1)\n')
    (package / "top.py").write_text('"""The top."""\nfrom gluepkg.base import X\n\n\ndef y():\n    return X\n')
    (package / "again.py").write_text("X = 2\n")
    (package / "reaches.py").write_text("from loomcheck.spec.vocabulary import vocabulary\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    text = "\n".join(render(("gluepkg.base", "gluepkg.top")))
    assert "import json" in text and "X = json.dumps(1)" in text and "def y():" in text
    assert "The base." not in text and "from gluepkg" not in text
    namespace: dict[str, object] = {}
    exec(compile(text, "script", "exec"), namespace)
    assert namespace["y"]() == "1"  # type: ignore[operator]
    with pytest.raises(ValueError, match="defined by both"):
        render(("gluepkg.base", "gluepkg.again"))
    with pytest.raises(ValueError, match="does not hold"):
        render(("gluepkg.reaches",))
