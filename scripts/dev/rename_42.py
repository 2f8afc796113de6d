"""The renames of #42 item 5 (one meaning per name), as steps a tree can be put through again.

Each step moves what it moves with ``git mv`` (when the old path is still there) and rewrites the old
names with regular expressions in ``*.py``, ``*.md``, ``*.toml``, ``*.yaml``, ``*.json`` under src, tests,
docs, benchmarks, skills, scripts and README.md (never CHANGELOG.md, never this script). A step is
idempotent: on a tree it has already been through it changes nothing, so after merging a branch that
still used an old name, run the step again::

    python scripts/dev/rename_42.py                  # every step, in order
    python scripts/dev/rename_42.py sizing packset   # those steps
    python scripts/dev/rename_42.py --list           # the steps and what each renames
    python scripts/dev/rename_42.py --check          # exit 1 when a step would still change something

Run from the repository root; then ``ruff check --fix`` and ``ruff format`` (an import moved may sort
differently) and commit.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOTS = ("src", "tests", "docs", "benchmarks", "skills", "scripts", "README.md")
SUFFIXES = (".py", ".md", ".toml", ".yaml", ".yml", ".json")
NEVER = ("CHANGELOG.md", "scripts/dev/rename_42.py")


@dataclass(frozen=True)
class Step:
    """One rename: paths to move (old -> new, relative to the root) and (pattern, replacement) pairs."""

    name: str
    what: str
    moves: tuple[tuple[str, str], ...] = ()
    subs: tuple[tuple[str, str], ...] = ()
    #: run after the substitutions: tidy-ups that depend on the whole tree (returns the files changed)
    after: Callable[[Path, bool], list[Path]] | None = field(default=None)


def _drop_layout_alias(root: Path, dry: bool) -> list[Path]:
    """Delete ``Layout.hf`` (the alias the pipeline used while it was being split) once nothing says it."""
    schema = next(
        (
            path
            for package in ("packset", "format")
            if (path := root / f"src/bridgepack/data/{package}/_schema.py").exists()
        ),
        None,
    )
    if schema is None or any(
        re.search(r"\bLayout\.hf\b", path.read_text(encoding="utf-8")) for path in _files(root)
    ):
        return []
    text = schema.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    marker = next((i for i, line in enumerate(lines) if "# rename_42: old member name" in line), None)
    if marker is None:
        return []
    start = marker
    while start > 0 and lines[start - 1].lstrip().startswith("#:"):  # the alias's own comment lines
        start -= 1
    if not dry:
        schema.write_text("".join(lines[:start] + lines[marker + 1 :]), encoding="utf-8")
    return [schema]


STEPS: tuple[Step, ...] = (
    Step(
        "layout",
        "Layout.hf -> Layout.padding_free (the value, recorded in metadata, stays 'hf'); the alias goes when "
        "nothing uses it",
        subs=((r"\bLayout\.hf\b", "Layout.padding_free"),),
        after=_drop_layout_alias,
    ),
    Step(
        "sizing",
        "the library side of `bridgepack plan` (pack-size candidates, DP imbalance): bridgepack.plan -> "
        "bridgepack.sizing, tests/plan -> tests/sizing (the command stays `plan`, PackPlan stays the plan of "
        "packs)",
        moves=(("src/bridgepack/plan", "src/bridgepack/sizing"), ("tests/plan", "tests/sizing")),
        subs=(
            (r"\bbridgepack\.plan\b", "bridgepack.sizing"),
            (r"\bbridgepack/plan/", "bridgepack/sizing/"),
            (r"(?<![\w/])tests/plan/", "tests/sizing/"),
            (r'"doctor", "plan", "train", "diff"', '"doctor", "sizing", "train", "diff"'),
            (r"\| `doctor`, `plan`, `train`, `diff` \|", "| `doctor`, `sizing`, `train`, `diff` |"),
        ),
    ),
    Step(
        "packset",
        "the on-disk format of a pack set: bridgepack.data.format -> bridgepack.data.packset (`format` is "
        "left meaning an output format, --format text|json, and an input format)",
        moves=(("src/bridgepack/data/format", "src/bridgepack/data/packset"),),
        subs=(
            (r"\bbridgepack\.data\.format\b", "bridgepack.data.packset"),
            (r"\bfrom bridgepack\.data import format\b", "from bridgepack.data import packset"),
            (r"\bdata/format\b", "data/packset"),
            (r'frozenset\(\{"format"\}\)', 'frozenset({"packset"})'),
        ),
    ),
    Step(
        "trl",
        "the datasets/TRL API: bridgepack.hf -> bridgepack.trl, tests/hf -> tests/trl_api (not tests/trl: "
        "with tests/ on sys.path a folder named trl would answer `import trl` where TRL is not installed)",
        moves=(("src/bridgepack/hf", "src/bridgepack/trl"), ("tests/hf", "tests/trl_api")),
        subs=(
            (r"\bbridgepack\.hf\b", "bridgepack.trl"),
            (r"\bbridgepack/hf/", "bridgepack/trl/"),
            (r"(?<![\w/])tests/hf/", "tests/trl_api/"),
            (r'"verify", "hf", "correlate"', '"verify", "trl", "correlate"'),
            (r"\| `verify`, `hf`, `correlate`", "| `verify`, `trl`, `correlate`"),
        ),
    ),
)


def _files(root: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    """The files a step rewrites; ``skip``: path prefixes left as they are."""
    found: list[Path] = []
    for name in ROOTS:
        base = root / name
        candidates = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for path in candidates:
            relative = path.relative_to(root).as_posix()
            if relative.startswith(skip) or relative in NEVER or "/." in relative:
                continue
            if path.is_file() and path.suffix in SUFFIXES:
                found.append(path)
    return found


def _move(root: Path, old: str, new: str, dry: bool) -> bool:
    """``git mv old new`` when ``old`` is there and ``new`` is not; what was left behind is moved file by
    file (a branch that added a module to the old package after the move)."""
    source, target = root / old, root / new
    if not source.exists():
        return False
    if dry:
        return True
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", old, new], cwd=root, check=True)
        return True
    for path in sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        dest = target / path.relative_to(source)
        if dest.exists():
            raise SystemExit(f"{path}: also at {dest}; merge the two by hand, then run the step again")
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "mv", path.relative_to(root).as_posix(), dest.relative_to(root).as_posix()],
            cwd=root,
            check=True,
        )
    return True


def _drop_caches(folder: Path) -> None:
    """Delete the ``__pycache__`` folders a move carried along: numba's cache there names the old module,
    and loading it fails (``No module named 'bridgepack.hf'``) until it is gone."""
    for cache in sorted(folder.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache, ignore_errors=True)


def run_step(root: Path, step: Step, dry: bool = False, skip: tuple[str, ...] = ()) -> list[str]:
    """Apply ``step`` under ``root``, leaving paths under ``skip`` alone; the paths it changed (or would
    change, ``dry``)."""
    changed = [f"{old} -> {new}" for old, new in step.moves if _move(root, old, new, dry)]
    for _old, new in step.moves:
        if not dry and (root / new).is_dir():
            _drop_caches(root / new)
    compiled = [(re.compile(pattern), replacement) for pattern, replacement in step.subs]
    for path in _files(root, skip):
        text = path.read_text(encoding="utf-8")
        new_text = text
        for pattern, replacement in compiled:
            new_text = pattern.sub(replacement, new_text)
        if new_text != text:
            changed.append(path.relative_to(root).as_posix())
            if not dry:
                path.write_text(new_text, encoding="utf-8")
    if step.after is not None:
        changed += [p.relative_to(root).as_posix() for p in step.after(root, dry)]
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("steps", nargs="*", help="steps to run (default: all, in order)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="repository root (default: here)")
    parser.add_argument("--list", action="store_true", help="list the steps")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a step would")
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="PATH",
        help="leave files under PATH alone (another branch owns them; run again without it after merging)",
    )
    args = parser.parse_args(argv)
    by_name = {step.name: step for step in STEPS}
    if args.list:
        for step in STEPS:
            print(f"{step.name:10} {step.what}")
        return 0
    unknown = [name for name in args.steps if name not in by_name]
    if unknown:
        parser.error(f"unknown step {', '.join(unknown)} (steps: {', '.join(by_name)})")
    pending = 0
    for step in [by_name[name] for name in args.steps] or list(STEPS):
        changed = run_step(args.root, step, dry=args.check, skip=tuple(args.skip))
        pending += len(changed)
        print(f"{step.name}: {len(changed)} path(s) {'to change' if args.check else 'changed'}")
        for path in changed:
            print(f"  {path}")
    return 1 if args.check and pending else 0


if __name__ == "__main__":
    sys.exit(main())
