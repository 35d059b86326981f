"""The package's import graph, read from the source (every import, at any depth of a module,
including those only a type checker follows), and the layer order the README's layout table
writes down. tests/test_layers.py judges the one against the other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_PACKAGE = {"tests", "examples", "docs", "results", "build", ".venv", ".git", ".ci", "node_modules"}
ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*?)\|")


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name (loomcheck.x.y) -> file, for every module the package installs."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in NOT_PACKAGE or "__pycache__" in rel.parts:
            continue
        parts = ["loomcheck", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The loomcheck modules `name` imports (a `from package import module` names the module)."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("loomcheck") and target != name:
                found.add(target)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    found = modules(root)
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def layers(readme: Path = ROOT / "README.md") -> dict[str, int]:
    """Folder (or top-level file) -> its layer, from the README's layout table."""
    text = readme.read_text(encoding="utf-8").split("## Layout", 1)[1].split("\n## ", 1)[0]
    order: dict[str, int] = {}
    for line in text.splitlines():
        row = ROW.match(line)
        if row:
            for place in re.findall(r"`([^`]+)`", row.group(2)):
                order[place.rstrip("/").removesuffix(".py")] = int(row.group(1))
    return order


def place_of(module: str) -> str:
    """The folder (or top-level module) a module belongs to: loomcheck.run.runner -> run."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def back_edges(edges: dict[str, set[str]], order: dict[str, int]) -> list[str]:
    """Every import from a module to one at its own layer in another folder, or above."""
    wrong = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            a, b = place_of(source), place_of(target)
            if a != b and order[b] >= order[a]:
                wrong.append(f"{source} (layer {order[a]}, {a}/) imports {target} (layer {order[b]}, {b}/)")
    return wrong


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found
