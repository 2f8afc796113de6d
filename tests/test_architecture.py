"""The package layers of docs/architecture.md, enforced: every import (module level or inside a function)
goes to a lower layer, so there is no import circle and no function-level import hiding one; inside
``bridgepack.data`` the same for its four sub-packages; no module reaches into another package's private
(``_name``) module or name, nor into another module's private name; and every public name has one import
path."""

from __future__ import annotations

import ast
import functools
import importlib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

import bridgepack

SRC = Path(bridgepack.__file__).parent

#: Lowest first; a package may import packages of lower layers only (docs/architecture.md).
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "results", "_console"}),
    frozenset(
        {
            "_io",
            "_progress",
            "_plot",
            "_faults",
            "_ordered",
            "_ranges",
            "_arrow",
            "_bridge_keys",
            "_parquet",
            "_typed",
        }
    ),
    frozenset({"_yaml", "<root>", "findings"}),
    frozenset({"fingerprint", "packing", "translate", "curves", "env"}),
    frozenset({"data"}),
    frozenset({"batching", "engine"}),
    frozenset({"doctor", "sizing", "train", "diff"}),
    frozenset({"verify", "trl", "correlate", "demo", "_api", "_pack"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)


#: The layers inside ``bridgepack.data``, lowest first: the on-disk format; reading samples; then, side by
#: side, the pack pipeline and the readers of packed data (neither imports the other).
DATA_LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"packset"}),
    frozenset({"samples"}),
    frozenset({"pipeline", "packed"}),
)


def _package(module: str, depth: int = 1) -> str:
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else "<root>"


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _declared_for_type_checkers(tree: ast.Module) -> set[ast.AST]:
    """The import statements of the root package's ``if TYPE_CHECKING:`` block: they never run (the main
    jobs load on first access), and declare the lazy names' types to a type checker."""
    return {
        inner
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for inner in node.body
    }


def parsed(path: Path) -> ast.Module:
    """A source file's syntax tree, parsed once per test process for each version of the file (several
    checks here walk every module of the package)."""
    stat = path.stat()
    return _parse(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parse(path: Path, _mtime_ns: int, _size: int) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def imports(src: Path = SRC) -> Iterator[tuple[Path, int, str, list[str]]]:
    """``(file, line, importing module, imported dotted names)`` of every bridgepack import statement; ``from
    a import b`` yields ``a.b`` (a module or a name: both are what the statement reaches). bridgepack imports
    absolutely; a relative import fails here so none slips past the walk. The root's type-checking
    declarations are left out (:func:`_declared_for_type_checkers`); nowhere else is one."""
    for path in sorted(src.rglob("*.py")):
        module = _module_name(path, src)
        tree = parsed(path)
        skipped = _declared_for_type_checkers(tree) if module == "bridgepack" else set()
        for node in ast.walk(tree):
            if node in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                assert not node.level, f"{path}:{node.lineno}: relative import"
                base = node.module or ""
                targets = [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            targets = [t for t in targets if t == "bridgepack" or t.startswith("bridgepack.")]
            if targets:
                yield path, node.lineno, module, targets


def _is_module(src: Path, dotted: list[str]) -> bool:
    path = src.parent / Path(*dotted)
    return path.is_dir() or path.with_suffix(".py").exists()


def import_edges(src: Path = SRC, prefix: str = "bridgepack") -> dict[tuple[str, str], list[str]]:
    """``(importing package, imported package) -> ["file:line", ...]``: the packages directly under
    ``prefix`` (``bridgepack``, or ``bridgepack.data`` for its sub-packages), over every import statement."""
    depth = prefix.count(".") + 1
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path, line, module, targets in imports(src):
        if not module.startswith(prefix + "."):
            continue
        here = _package(module, depth)
        for target in targets:
            if target.startswith(prefix + "."):
                there = _package(target, depth)
                if not _is_module(src, [*prefix.split("."), there]):  # a name, e.g. bridgepack.__version__
                    there = "<root>"
                if there != here:
                    edges[(here, there)].append(f"{path.relative_to(src.parent)}:{line}")
    return edges


def _layer(package: str, layers: tuple[frozenset[str], ...] = LAYERS) -> int:
    for index, members in enumerate(layers):
        if package in members:
            return index
    raise AssertionError(f"package {package} is in no layer of docs/architecture.md: add it")


@pytest.mark.parametrize(("prefix", "layers"), [("bridgepack", LAYERS), ("bridgepack.data", DATA_LAYERS)])
def test_every_import_goes_down_the_layers(prefix: str, layers: tuple[frozenset[str], ...]) -> None:
    upward = [
        f"{prefix}.{a} -> {prefix}.{b} ({', '.join(where[:3])})"
        for (a, b), where in sorted(import_edges(prefix=prefix).items())
        if _layer(b, layers) >= _layer(a, layers)
    ]
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_data_has_only_its_sub_packages() -> None:
    """``bridgepack.data`` is four sub-packages and a docstring: no module of its own to grow back."""
    assert {p.name for p in (SRC / "data").iterdir() if p.name != "__pycache__"} == {
        "__init__.py",
        *(name for layer in DATA_LAYERS for name in layer),
    }


def _owner(dotted: list[str], src: Path) -> list[str] | None:
    """The package that owns the first private (``_name``) part of a dotted import, or None if all public.
    A private module belongs to its package; a private name in a module belongs to that module's package."""
    for index, part in enumerate(dotted):
        if part.startswith("_") and not part.startswith("__"):
            owner = dotted[:index]
            if not (src.parent / Path(*owner)).is_dir():
                owner = owner[:-1]
            return owner
    return None


def private_reaches(src: Path = SRC) -> list[str]:
    """Imports of a private module or name from outside the package that owns it."""
    found = []
    for path, line, module, targets in imports(src):
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for target in targets:
            owner = _owner(target.split("."), src)
            if owner is not None and package[: len(owner)] != owner:
                found.append(f"{path.relative_to(src.parent)}:{line}: {target}")
    return found


def test_no_module_imports_another_packages_private_parts() -> None:
    found = private_reaches()
    assert not found, "private imports across packages (export the name from the front door):\n" + "\n".join(
        found
    )


def test_the_private_check_sees_a_reach(tmp_path: Path) -> None:
    fake = tmp_path / "bridgepack"
    for package in ("a", "b"):
        (fake / package).mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "a" / "_inner.py").write_text("X = 1\n")
    (fake / "a" / "ok.py").write_text("from bridgepack.a._inner import X\n")
    (fake / "b" / "bad.py").write_text("from bridgepack.a._inner import X\nfrom bridgepack.a import _inner\n")
    assert private_reaches(fake) == [
        "bridgepack/b/bad.py:1: bridgepack.a._inner.X",
        "bridgepack/b/bad.py:2: bridgepack.a._inner",
    ]


#: Imports of another module's private name that were there when the check came (#42 item 4). This table
#: may only shrink: a new entry is a new reach into a module's insides; an entry that no longer occurs
#: fails the test until it is removed here, so a mended one cannot come back unnoticed.
KNOWN_PRIVATE_NAME_IMPORTS: frozenset[str] = frozenset(
    {
        "bridgepack/data/packed/_supervised.py: bridgepack.data.packed._reader._first_true",
        "bridgepack/data/packed/_supervised.py: bridgepack.data.packed._reader._list_column",
        "bridgepack/data/samples/text/_chat/_rows.py: bridgepack.data.samples._examples._kind",
        "bridgepack/doctor/_defect_triggers.py: bridgepack.doctor._rules._full_iteration_graph",
        "bridgepack/doctor/_doctor.py: bridgepack.doctor._load._build_view",
    }
)


def private_name_imports(src: Path = SRC) -> set[str]:
    """``"file: module.name"`` of every import of a private (``_name``) name defined in another module,
    within a package too: a module's ``_`` names are its own insides, and a name two modules share is the
    package's (public in a private module, e.g. ``_pass1.SpoolToScratch``). A private *module* is not a
    private name: a package's modules import each other's public names freely."""
    found = set()
    for path, _line, _module, targets in imports(src):
        for target in targets:
            *owner, name = target.split(".")
            if name.startswith("_") and not name.startswith("__") and not _is_module(src, [*owner, name]):
                found.add(f"{path.relative_to(src.parent)}: {target}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    found = private_name_imports()
    new = sorted(found - KNOWN_PRIVATE_NAME_IMPORTS)
    mended = sorted(KNOWN_PRIVATE_NAME_IMPORTS - found)
    assert not new, (
        "imports of another module's private name (drop the underscore, or move it):\n" + "\n".join(new)
    )
    assert not mended, "mended: remove from KNOWN_PRIVATE_NAME_IMPORTS:\n" + "\n".join(mended)


def test_the_private_name_check_sees_a_reach(tmp_path: Path) -> None:
    fake = tmp_path / "bridgepack"
    (fake / "a").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "a" / "__init__.py").write_text("")
    (fake / "a" / "_inner.py").write_text("X = 1\n_Y = 2\n")
    (fake / "a" / "_other.py").write_text(
        "from bridgepack.a._inner import X\nfrom bridgepack.a import _inner\n"
        "def f():\n    from bridgepack.a._inner import _Y\n"
    )
    assert private_name_imports(fake) == {"bridgepack/a/_other.py: bridgepack.a._inner._Y"}


def _front_doors() -> dict[str, list[str]]:
    """Every package's ``__all__`` (the root's lazy names aside: ``bridgepack`` is the main jobs' door)."""
    doors = {}
    for init in sorted(SRC.rglob("__init__.py")):
        name = _module_name(init, SRC)
        if name != "bridgepack":
            doors[name] = list(getattr(importlib.import_module(name), "__all__", []))
    return doors


def test_every_package_has_a_front_door() -> None:
    """Each package's ``__init__`` lists its public names (private ones, ``_chat``, are exempt)."""
    missing = [name for name, names in _front_doors().items() if not names and "._" not in name]
    missing = [name for name in missing if name not in ("bridgepack.data", "bridgepack.resources")]
    assert not missing, f"packages without __all__: {missing}"


def _defined_names(package_dir: Path) -> set[str]:
    """Names a package's own modules define at top level (assignments, functions, classes)."""
    names: set[str] = set()
    for path in package_dir.rglob("*.py"):
        for node in parsed(path).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    elts = target.elts if isinstance(target, ast.Tuple) else [target]
                    names.update(t.id for t in elts if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return names


def test_one_import_path_per_public_name() -> None:
    """A package exports only what is defined inside it: a name re-exported by a second package would be
    two import paths for one thing (and two places to look for it). Constants count too."""
    strays = []
    for door, names in _front_doors().items():
        package_dir = SRC / Path(*door.split(".")[1:])
        defined = _defined_names(package_dir)
        strays += [f"{door}.{name}" for name in names if name not in defined]
    assert not strays, "names exported by a package that does not define them:\n" + "\n".join(strays)


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
    fake = tmp_path / "bridgepack"
    (fake / "packing").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "packing" / "__init__.py").write_text("def f():\n    from bridgepack.data import x\n")
    (fake / "data").mkdir()
    assert import_edges(fake) == {("packing", "data"): ["bridgepack/packing/__init__.py:2"]}
