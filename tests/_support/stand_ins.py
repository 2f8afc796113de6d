"""Run one file of a peer's wheel with every ``megatron.*`` / ``modelopt.*`` import replaced by a stand-in.

For code paths that only need torch (batch plumbing, CP index math, collates): the file's own functions run
for real, the names it imports from the rest of its package are inert stand-ins, and ``sys.modules`` is
restored afterwards so nothing leaks into bridgepack's or other tests' imports.
"""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path
from typing import Any

from _support.peers import exec_file_as_module


class _StandIn(type):
    """Stand-in classes: any attribute (an enum member, a nested helper) is the stand-in itself."""

    def __getattr__(cls, _name: str) -> Any:
        return cls


def _accept_anything(*_args: Any, **_kwargs: Any) -> None:
    """A stand-in's constructor: module-level code may call an imported name (a version check, a factory)."""


def load_with_stand_ins(path: Path, name: str) -> types.ModuleType:
    """Import ``path`` with every ``megatron.*`` / ``modelopt.*`` import replaced by a stand-in object.

    The stand-ins are only names the module binds at import time; the test then replaces the three it calls
    on the get_batch path (stage predicates and the CP slicer). ``sys.modules`` is restored afterwards.
    """
    tree = ast.parse(path.read_text())
    wanted: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] in ("megatron", "modelopt")
        ):
            wanted.setdefault(node.module, set()).update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("megatron", "modelopt"):
                    wanted.setdefault(alias.name, set())
    prefixes = {".".join(m.split(".")[: i + 1]) for m in wanted for i in range(m.count(".") + 1)}
    saved = {p: sys.modules.get(p) for p in prefixes}
    try:
        for prefix in sorted(prefixes):
            module = types.ModuleType(prefix)
            module.__path__ = []  # type: ignore[attr-defined]
            sys.modules[prefix] = module
            parent, _, leaf = prefix.rpartition(".")
            if parent:
                setattr(sys.modules[parent], leaf, module)
        for module_name, names in wanted.items():
            for attr in names:
                setattr(sys.modules[module_name], attr, _StandIn(attr, (), {"__init__": _accept_anything}))
        return exec_file_as_module(path, name, register=True)
    finally:
        for prefix, old in saved.items():
            if old is None:
                sys.modules.pop(prefix, None)
            else:
                sys.modules[prefix] = old
