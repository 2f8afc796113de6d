"""The package layers of docs/architecture.md, enforced: every import (module level or inside a function)
goes to a lower layer, so there is no import circle and no function-level import hiding one."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import seqpack

SRC = Path(seqpack.__file__).parent

#: Lowest first; a package may import packages of lower layers only (docs/architecture.md).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "_console"}),
    frozenset({"_io", "_progress", "_plot", "_faults", "_ordered", "_ranges", "_arrow", "_parquet"}),
    frozenset({"_yaml", "<root>", "findings"}),
    frozenset({"fingerprint", "packing", "translate", "curves", "env"}),
    frozenset({"data"}),
    frozenset({"batching"}),
    frozenset({"doctor", "plan", "train", "diff"}),
    frozenset({"verify", "hf", "correlate", "demo", "config", "_api"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_edges(src: Path = SRC) -> dict[tuple[str, str], list[str]]:
    """``(importing package, imported package) -> ["file:line", ...]`` over every import statement
    (seqpack imports absolutely; a relative import fails here so none slips past the walk)."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(src.rglob("*.py")):
        here = _package(_module_name(path, src))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                assert not node.level, f"{path}:{node.lineno}: relative import"
                targets = [node.module or ""]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                if target == "seqpack" or target.startswith("seqpack."):
                    there = _package(target)
                    if there != here:
                        edges[(here, there)].append(f"{path.relative_to(src.parent)}:{node.lineno}")
    return edges


def _layer(package: str) -> int:
    for index, members in enumerate(LAYERS):
        if package in members:
            return index
    raise AssertionError(f"package seqpack.{package} is in no layer of docs/architecture.md: add it")


def test_every_import_goes_down_the_layers() -> None:
    upward = [
        f"seqpack.{a} -> seqpack.{b} ({', '.join(where[:3])})"
        for (a, b), where in sorted(import_edges().items())
        if _layer(b) >= _layer(a)
    ]
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_no_import_circle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in import_edges():
        graph[a].add(b)
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import circle: " + " -> ".join([*trail, node, nxt]))
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


def test_fingerprint_is_a_leaf() -> None:
    """The pack writer and every reader share the fingerprint code: it may not depend on either."""
    imported = {b for (a, b) in import_edges() if a == "fingerprint"}
    assert imported == set()


def test_the_walk_sees_imports_inside_functions(tmp_path: Path) -> None:
    """An upward import hidden in a function body is an edge like any other."""
    fake = tmp_path / "seqpack"
    (fake / "packing").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "packing" / "__init__.py").write_text("def f():\n    from seqpack.data import x\n")
    assert import_edges(fake) == {("packing", "data"): ["seqpack/packing/__init__.py:2"]}
