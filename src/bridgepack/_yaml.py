"""Safe YAML reading with positions: ``yaml.safe_load`` semantics, errors as ``file:line:col``.

Python tags (``!!python/object``...) are refused by the safe constructor, as every YAML input of bridgepack
must
be (CONVENTIONS: data and files). Before anything is built, one pass over the parser's events bounds the
document (``docs/failure-behaviour.md``): nesting at most :data:`MAX_DEPTH` levels (deeper would exhaust
Python's recursion in the composer), no alias pointing into its own anchor (a cycle), and at most
:data:`MAX_NODES` nodes once every alias is expanded (a few lines of ``&a [*b, *b, ...]`` would otherwise
grow to gigabytes when the document is merged into an OmegaConf config).

Alongside the document, :func:`load_yaml` returns the 1-based line of
every mapping key, by dotted path, so later findings can point at the line a field was written on (and,
into ``columns`` when given, its 1-based column: ``file:line:col`` as linters print it)::

    model:                 -> lines["model"] == 1             columns["model"] == 1
      seq_length: 4096     -> lines["model.seq_length"] == 2  columns["model.seq_length"] == 3
"""

from __future__ import annotations

import os
import re
from typing import Any, ClassVar

import yaml

from bridgepack._io import read_bytes
from bridgepack.errors import InputError

#: Deepest nesting of mappings/sequences accepted (real configs nest < 10 levels).
MAX_DEPTH = 64
#: Most nodes a document may hold with its aliases expanded (a Bridge run_config.yaml has ~2,000).
MAX_NODES = 200_000


class _Loader(yaml.SafeLoader):
    """The safe loader without the implicit timestamp type: ``2024-01-01`` stays a string, as OmegaConf
    (which Bridge loads configs with) reads it."""

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def load_yaml(
    path: str | os.PathLike[str],
    duplicates: list[tuple[str, int, int]] | None = None,
    *,
    columns: dict[str, int] | None = None,
) -> tuple[Any, dict[str, int]]:
    """Read ``path`` as YAML; return ``(document, {dotted key path: line})``."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{os.fspath(path)}: not UTF-8 text (byte {exc.start})") from None
    return parse_yaml(text, os.fspath(path), duplicates, columns=columns)


def parse_yaml(
    text: str,
    name: str = "<string>",
    duplicates: list[tuple[str, int, int]] | None = None,
    *,
    columns: dict[str, int] | None = None,
) -> tuple[Any, dict[str, int]]:
    """Parse YAML ``text`` (named ``name`` in messages) with the safe loader.

    A key written twice in one mapping is silently "last wins" for a YAML parser and a lost setting for
    the user: each is appended to ``duplicates`` as ``(dotted key, line, first line)``, or, when no list is
    given, refused as an :class:`InputError` naming both lines.
    """
    loader: _Loader | None = None
    try:
        _check_bounds(text, name)
        loader = _Loader(text)
        node = loader.get_single_node()
        document = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "invalid YAML"
        raise InputError(f"{_at(name, mark)}: not valid YAML ({problem})") from None
    except yaml.reader.ReaderError as exc:  # a byte YAML does not allow (NUL, other control characters)
        line = text.count("\n", 0, exc.position) + 1
        raise InputError(f"{name}:{line}: character #x{exc.character:04x} is not allowed in YAML") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{name}: invalid YAML ({' '.join(str(exc).split())})") from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[str, int] = {}
    found: list[tuple[str, int, int]] = [] if duplicates is None else duplicates
    if node is not None:
        _collect_lines(node, "", lines, found, {} if columns is None else columns)
    if duplicates is None and found:
        key, line, first = found[0]
        raise InputError(f"{name}:{line}: key '{key}' is given twice (first at line {first})")
    return document, lines


def _at(name: str, mark: yaml.Mark | None) -> str:
    return f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name


def _check_bounds(text: str, name: str) -> None:
    """Refuse documents nested deeper than MAX_DEPTH, with cyclic aliases, or expanding past MAX_NODES.

    Works on the event stream (iterative, nothing built). Each open collection counts its nodes with
    aliases expanded; an anchor remembers its count when it closes, so ``*a`` adds that many::

        a: &a [1, 2, 3]        -> anchor a = 4 nodes (the sequence and its three scalars)
        b: [*a, *a]            -> 1 + 4 + 4 = 9 nodes
    """
    sizes: dict[str, int] = {}
    stack: list[tuple[str | None, int]] = []  # (anchor, total before it opened) of each open collection
    total = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if len(stack) >= MAX_DEPTH:
                raise InputError(f"{_at(name, event.start_mark)}: nested deeper than {MAX_DEPTH} levels")
            stack.append((event.anchor, total))
            total += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, before = stack.pop()
            if anchor is not None:
                sizes[anchor] = total - before
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = 1
            total += 1
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in sizes:
                total += sizes[event.anchor]
            elif any(anchor == event.anchor for anchor, _ in stack):
                where = _at(name, event.start_mark)
                raise InputError(f"{where}: alias *{event.anchor} refers to its own enclosing node (a cycle)")
            # an undefined alias: the composer reports it with its position
        if total > MAX_NODES:
            where = _at(name, event.start_mark)
            raise InputError(f"{where}: more than {MAX_NODES} nodes with aliases expanded")


def _collect_lines(
    node: yaml.Node,
    prefix: str,
    lines: dict[str, int],
    duplicates: list[tuple[str, int, int]],
    columns: dict[str, int],
) -> None:
    if not isinstance(node, yaml.MappingNode):
        return
    here: dict[str, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.value == "<<":
            continue
        path = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
        line = key_node.start_mark.line + 1
        if key_node.value in here:
            duplicates.append((path, line, here[key_node.value]))
        here[key_node.value] = line
        lines[path] = line
        columns[path] = key_node.start_mark.column + 1
        _collect_lines(value_node, path, lines, duplicates, columns)
