"""``bridgepack doctor --fix --write-config``: the user's YAML with the fix overrides applied, the rest kept.

A round trip through ruamel.yaml (the ``yaml`` extra; imported only here) keeps comments, key order,
quoting and indentation; a fixed key keeps its place and its comment, a new key goes to the end of its
section (sections are created when missing)::

    model:                          model:
      seq_length: 510  # CP 2  ->     seq_length: 512  # CP 2
    dataset:                        dataset:
      seq_length: 510                 seq_length: 512

Keys are written where the file writes them: inside a ``ConfigContainer:`` wrapper, and under the <= v0.5
names (``packed_sequence_specs``, ``pack_sequences_in_batch``) in a file that uses those. The caller
re-checks the result before it replaces anything.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from bridgepack.doctor._load import LEGACY_DATASET_NAMES, parse_override
from bridgepack.errors import InputError, UsageError

#: The key Bridge's performance scripts write around a whole config (as the loader reads it).
_WRAPPER = "ConfigContainer"


def _ruamel() -> Any:
    """The ``ruamel.yaml`` module (with ``util``), or the usage error naming the extra."""
    try:
        import ruamel.yaml
        import ruamel.yaml.util
    except ImportError:
        raise UsageError(
            "rewriting a YAML config with its comments needs ruamel.yaml: pip install 'bridgepack[yaml]'"
        ) from None
    return ruamel.yaml


def _round_trip(text: str, name: str) -> tuple[Any, Any]:
    """A round-trip loader/dumper set to the file's own indentation, and the loaded document."""
    ry = _ruamel()
    try:
        _, sequence, offset = ry.util.load_yaml_guess_indent(text)
        mapping = _mapping_indent(text)
        yaml = ry.YAML()
        yaml.preserve_quotes = True
        yaml.allow_duplicate_keys = (
            True  # the doctor reports them (SP107); here the file is read as YAML reads it
        )
        yaml.width = 1 << 16  # never re-wrap a long value
        if offset is None:  # no block sequence in the file: a new one is written as "  - item"
            sequence, offset = mapping + 2, 2
        yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
        yaml.representer.add_representer(
            type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
        )
        return yaml, yaml.load(text)
    except ry.YAMLError as exc:
        raise InputError(f"{name}: not valid YAML ({' '.join(str(exc).split())})") from None


def _mapping_indent(text: str) -> int:
    """The indentation of the file's first nested mapping key (2 when nothing is nested)."""
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if stripped and stripped != line and not stripped.startswith(("#", "-")):
            return len(line) - len(stripped)
    return 2


def _file_key(section: Any, key: str) -> list[str]:
    """The path of ``key`` as the file writes it (the <= v0.5 name where the file uses it)."""
    parts = key.split(".")
    dataset = section.get("dataset") if hasattr(section, "get") else None
    if parts[0] == "dataset" and len(parts) > 1 and dataset is not None and hasattr(dataset, "get"):
        for old, new in LEGACY_DATASET_NAMES.items():
            if parts[1] == new and old in dataset and new not in dataset:
                parts[1] = old
    return parts


def _set(root: Any, parts: list[str], value: Any, item: str) -> None:
    mapping_type = type(root)
    node = root
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = mapping_type()
        elif not hasattr(child, "get"):
            where = ".".join(parts[: depth + 1])
            raise UsageError(f"cannot apply {item}: {where} is a value in the file, not a section")
        node = child
    node[parts[-1]] = value


def fixed_yaml(text: str, overrides: Sequence[str], *, name: str = "<config>") -> str:
    """``text`` (a Bridge YAML) with each ``key=value`` override set, everything else as it was."""
    yaml, document = _round_trip(text, name)
    if document is None:
        document = yaml.load("{}\n")
    if not hasattr(document, "get"):
        raise InputError(f"{name}: expected a mapping of config sections")
    root = document
    if list(document) == [_WRAPPER] and hasattr(document[_WRAPPER], "get"):
        root = document[_WRAPPER]
    for item in overrides:
        key, value = parse_override(item)
        _set(root, _file_key(root, key), value, item)
    out = io.StringIO()
    yaml.dump(document, out)
    return out.getvalue()
