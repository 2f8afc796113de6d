"""The packing metadata sidecar ``{N}_metadata.jsonl`` (spec §3).

Despite its name the file is **one JSON array**, one dict appended per split (train first, then
validation). Bridge writes six keys in this order::

    [{"dataset_max_seqlen": 6, "max_samples_per_bin": 3, "packing_factor": 2.0,
      "packing_efficiency": 73.33, "pack_size": 10, "min_packed_seqlen": 5}]

Bridge's readers take the max (or, for ``min_packed_seqlen``, the min) across entries. seqpack adds one key
of its own after the six, ``"seqpack"``, holding its record of how the split was made (version, split,
mode, algorithm, seed, pad multiple, tokenizer, counts); readers ignore keys they do not know.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from seqpack._io import atomic_write_bytes, read_bytes
from seqpack.errors import DataError, InputError, shown
from seqpack.packing import BRIDGE_METADATA_KEYS

#: The key under which seqpack keeps its own record in each entry (CONVENTIONS: data and files).
SEQPACK_KEY = "seqpack"
#: Keys whose combined value across entries is the minimum; every other Bridge key combines by max.
_MIN_KEYS = frozenset({"min_packed_seqlen"})


def metadata_filename(pack_size: int) -> str:
    """Bridge's default sidecar name for packs of ``pack_size`` tokens: ``{N}_metadata.jsonl``."""
    return f"{pack_size}_metadata.jsonl"


def packed_filename(split: str, pack_size: int) -> str:
    """Bridge's default packed-data name for a split: ``{split}_{N}.idx.parquet``."""
    return f"{split}_{pack_size}.idx.parquet"


#: The flattened Hugging Face layout's split names, as ``datasets`` names them.
HF_SPLITS = {"training": "train", "validation": "validation"}
#: The HF layout's metadata sidecar: beside ``data/``, named so that no split pattern of ``datasets``
#: (nor Bridge's ``*_metadata.jsonl`` glob) picks it up.
HF_METADATA = "metadata.hf.jsonl"


def hf_filename(split: str) -> str:
    """The HF layout's data file, relative to the output directory: ``data/train-00000-of-00001.parquet``.

    The Hub's shard naming under ``data/`` is the first split pattern ``datasets`` tries, so
    ``load_dataset(D)``, ``load_dataset("parquet", data_dir=D)`` and ``data_files=`` find the splits
    and nothing else (the sidecar and the rejects files sit beside ``data/``). One pack size per
    directory: the pack size is in the metadata, not the name.
    """
    return f"data/{HF_SPLITS[split]}-00000-of-00001.parquet"


_HF_NAME = re.compile(r"^(?P<split>[a-z]+)-\d{5}-of-\d{5}\.parquet$")


def hf_split(path: str | os.PathLike[str]) -> str | None:
    """The split of an HF-layout data file (``data/train-00000-of-00001.parquet`` -> ``training``)."""
    match = _HF_NAME.match(Path(path).name)
    names = {hf: split for split, hf in HF_SPLITS.items()}
    return names.get(match.group("split")) if match else None


def hf_metadata_path(data_file: str | os.PathLike[str]) -> Path:
    """The sidecar of an HF-layout data file: ``D/data/train-....parquet`` -> ``D/metadata.hf.jsonl``."""
    return Path(data_file).parent.parent / HF_METADATA


def hf_data_dir(spec: str | os.PathLike[str]) -> str:
    """Where an HF-layout output directory keeps its data (``D`` -> ``D/data``); any other spec as given."""
    path = Path(spec)
    if path.is_dir() and (path / HF_METADATA).is_file() and (path / "data").is_dir():
        return os.fspath(path / "data")
    return os.fspath(spec)


#: Bridge's packed file names, ``{split}_{N}.idx.parquet`` (or legacy ``{split}_{N}.npy``), spec §3.
_PACKED_NAME = re.compile(
    r"^(?P<split>.+)_(?P<size>\d+)(\.idx\.parquet|\.idx\.pq|\.parquet|\.pq|\.npy)$", re.I
)
#: The order Bridge appends metadata entries in: training first, then validation (spec §3).
SPLIT_ORDER = ("training", "validation")


@dataclass(frozen=True)
class PackedNames:
    """What Bridge-style file names say about packed data: its split and pack size (``None`` if unknown)."""

    split: str | None
    pack_size: int | None


def packed_names(paths: Sequence[str | os.PathLike[str]]) -> PackedNames:
    """The split and pack size all ``paths`` agree on, from names like ``training_4096.idx.parquet``.

    >>> packed_names(["out/training_4096.idx.parquet"])
    PackedNames(split='training', pack_size=4096)
    """
    parsed = [_PACKED_NAME.match(Path(p).name) for p in paths]
    complete = bool(parsed) and all(parsed)
    splits = {m.group("split").lower() for m in parsed if m}
    sizes = {int(m.group("size")) for m in parsed if m}
    return PackedNames(
        split=splits.pop() if complete and len(splits) == 1 else None,
        pack_size=sizes.pop() if complete and len(sizes) == 1 else None,
    )


def find_metadata(paths: Sequence[str | os.PathLike[str]], pack_size: int | None = None) -> Path | None:
    """The sidecar beside packed data: ``{N}_metadata.jsonl`` in the data's directory.

    ``paths`` are the packed files (or one directory holding them); ``N`` is ``pack_size`` when given,
    else what the file names say. Without an ``N``, the directory's only ``*_metadata.jsonl`` is taken.
    ``None`` when there is no such file (or several candidates and no ``N``).
    """
    if not paths:
        return None
    first = Path(paths[0])
    directory = first if first.is_dir() else first.parent
    size = pack_size if pack_size is not None else packed_names(paths).pack_size
    if size is not None:
        candidate = directory / metadata_filename(size)
        return candidate if candidate.is_file() else None
    found = sorted(directory.glob("*_metadata.jsonl"))
    return found[0] if len(found) == 1 else None


def pick_entry(
    entries: Sequence[Mapping[str, Any]], split: str | None
) -> tuple[int, Mapping[str, Any]] | None:
    """The entry describing ``split``: by seqpack's record, else Bridge's append order, else the only one."""
    for index, entry in enumerate(entries):
        if split is not None and entry_split(entry) == split:
            return index, entry
    if split in SPLIT_ORDER and SPLIT_ORDER.index(split) < len(entries):
        index = SPLIT_ORDER.index(split)
        return index, entries[index]
    if len(entries) == 1:
        return 0, entries[0]
    return None


def read_metadata(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a sidecar: a JSON array of entries, each holding at least Bridge's six keys.

    Raises :class:`InputError` when the file is missing or not JSON, :class:`DataError` when it is JSON
    of the wrong shape (naming the entry and key).
    """
    raw = read_bytes(path)
    try:
        doc = orjson.loads(raw)  # nesting is bounded (1024 levels), unlike json.loads' recursion
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{os.fspath(path)}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    if not isinstance(doc, list):
        raise DataError(
            f"{os.fspath(path)}: expected a JSON array of metadata entries, found {type(doc).__name__}"
        )
    for index, entry in enumerate(doc):
        _check_entry(path, index, entry)
    return doc


def _check_entry(path: str | os.PathLike[str], index: int, entry: object) -> None:
    if not isinstance(entry, dict):
        raise DataError(f"{os.fspath(path)}: entry {index}: expected an object, found {type(entry).__name__}")
    for key in BRIDGE_METADATA_KEYS:
        if key not in entry:
            raise DataError(f"{os.fspath(path)}: entry {index}: missing key '{key}'")
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataError(
                f"{os.fspath(path)}: entry {index}: key '{key}': expected a number, found {shown(value)}"
            )


def combine_metadata(entries: Sequence[Mapping[str, Any]]) -> dict[str, int | float]:
    """Combine entries as Bridge's readers do: max of every key, min of ``min_packed_seqlen``."""
    if not entries:
        raise DataError("metadata holds no entries")
    combined: dict[str, int | float] = {}
    for key in BRIDGE_METADATA_KEYS:
        values = [entry[key] for entry in entries]
        combined[key] = min(values) if key in _MIN_KEYS else max(values)
    return combined


def entry_split(entry: Mapping[str, Any]) -> str | None:
    """The split seqpack recorded for an entry (``None`` for entries written by other tools)."""
    record = entry.get(SEQPACK_KEY)
    if isinstance(record, Mapping):
        split = record.get("split")
        return split if isinstance(split, str) else None
    return None


def write_metadata_entry(path: str | os.PathLike[str], entry: Mapping[str, Any]) -> None:
    """Append ``entry`` to the sidecar at ``path`` (creating it), replacing an entry of the same split.

    Bridge only ever appends; seqpack replaces the entry of a split it re-packs (with ``--overwrite``) so
    the file keeps one entry per split. The file is rewritten atomically.
    """
    entries: list[dict[str, Any]] = read_metadata(path) if Path(path).exists() else []
    split = entry_split(entry)
    if split is not None:
        entries = [e for e in entries if entry_split(e) != split]
    entries.append(dict(entry))
    # json.dumps' default separators, as Bridge writes the file with json.dump.
    atomic_write_bytes(path, json.dumps(entries).encode(), overwrite=True)
