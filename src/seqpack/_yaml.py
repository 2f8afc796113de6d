"""Safe YAML reading with positions: ``yaml.safe_load`` semantics, errors as ``file:line:col``.

Python tags (``!!python/object``...) are refused by the safe constructor, as every YAML input of seqpack must
be (CONVENTIONS: data and files). Alongside the document, :func:`load_yaml` returns the 1-based line of
every mapping key, by dotted path, so later findings can point at the line a field was written on::

    model:                 -> lines["model"] == 1
      seq_length: 4096     -> lines["model.seq_length"] == 2
"""

from __future__ import annotations

import os
import re
from typing import Any, ClassVar

import yaml

from seqpack._io import read_bytes
from seqpack.errors import InputError


class _Loader(yaml.SafeLoader):
    """The safe loader without the implicit timestamp type: ``2024-01-01`` stays a string, as OmegaConf
    (which Bridge loads configs with) reads it."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def load_yaml(path: str | os.PathLike[str]) -> tuple[Any, dict[str, int]]:
    """Read ``path`` as YAML; return ``(document, {dotted key path: line})``."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{os.fspath(path)}: not UTF-8 text (byte {exc.start})") from None
    return parse_yaml(text, os.fspath(path))


def parse_yaml(text: str, name: str = "<string>") -> tuple[Any, dict[str, int]]:
    """Parse YAML ``text`` (named ``name`` in messages) with the safe loader."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        document = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{name}: invalid YAML ({exc})") from None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if node is not None:
        _collect_lines(node, "", lines)
    return document, lines


def _collect_lines(node: yaml.Node, prefix: str, lines: dict[str, int]) -> None:
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
        lines[path] = key_node.start_mark.line + 1
        _collect_lines(value_node, path, lines)
