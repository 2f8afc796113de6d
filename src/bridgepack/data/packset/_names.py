"""The names of a pack set's files and of its splits: one owner for every name Bridge (or ``datasets``) reads.

A pack set of Bridge's layout, for packs of ``N`` tokens (bridge-format §3)::

    {N}_metadata.jsonl            the metadata sidecar, one entry per split (training first)
    training_{N}.idx.parquet      the packed rows of a split (``validation_{N}.idx.parquet`` beside it)
    rejects_training_{N}.jsonl    bridgepack's list of samples not packed, with the reason

A sharded set (``bridgepack pack --engine ray``) keeps the sidecar and the rejects file where they are and
puts a split's packs in a directory, one file a shard, zero-padded so that name order is pack order
(Bridge reads a directory's ``*.parquet`` sorted by name, rows numbered across files in that order)::

    training_{N}/training_{N}-00000.idx.parquet, training_{N}-00001.idx.parquet, ...

and of the Hugging Face layout (one pack size per directory)::

    metadata.hf.jsonl             the sidecar, beside data/
    data/train-00000-of-00001.parquet
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The splits of a pack set, in the order Bridge appends their metadata entries (bridge-format §3).
TRAINING = "training"
VALIDATION = "validation"
SPLITS: tuple[str, ...] = (TRAINING, VALIDATION)


def metadata_filename(pack_size: int) -> str:
    """Bridge's default sidecar name for packs of ``pack_size`` tokens: ``{N}_metadata.jsonl``."""
    return f"{pack_size}_metadata.jsonl"


def packed_filename(split: str, pack_size: int) -> str:
    """Bridge's default packed-data name for a split: ``{split}_{N}.idx.parquet``."""
    return f"{split}_{pack_size}.idx.parquet"


def sharded_dirname(split: str, pack_size: int) -> str:
    """The directory of a sharded split: ``{split}_{N}`` (only that split's packs of that size in it:
    Bridge trains on every ``*.parquet`` of a directory)."""
    return f"{split}_{pack_size}"


def shard_filename(split: str, pack_size: int, index: int) -> str:
    """Shard ``index`` of a sharded split: ``{split}_{N}-{index:05d}.idx.parquet``."""
    return f"{split}_{pack_size}-{index:05d}.idx.parquet"


#: The flattened Hugging Face layout's split names, as ``datasets`` names them.
HF_SPLITS = {TRAINING: "train", VALIDATION: "validation"}
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


def hf_data_dir(location: str | os.PathLike[str]) -> str:
    """Where an HF-layout output directory keeps its data (``D`` -> ``D/data``); any other as given."""
    path = Path(location)
    if path.is_dir() and (path / HF_METADATA).is_file() and (path / "data").is_dir():
        return os.fspath(path / "data")
    return os.fspath(location)


#: Bridge's packed file names, ``{split}_{N}.idx.parquet`` (or legacy ``{split}_{N}.npy``), bridge-format §3.
_PACKED_NAME = re.compile(
    r"^(?P<split>.+)_(?P<size>\d+)(?P<shard>-\d{5,})?(\.idx\.parquet|\.idx\.pq|\.parquet|\.pq|\.npy)$", re.I
)


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


def rejects_filename(split: str, pack_size: int | None = None) -> str:
    """The rejects file of a split's set, beside the metadata sidecar: ``rejects_{split}_{N}.jsonl`` for
    Bridge's layout, so that two pack sizes packed into one folder keep their own rejects;
    ``rejects_{split}.jsonl`` (``pack_size`` None) for the HF layout (one pack size a folder), and the
    name older Bridge-layout sets shared between pack sizes."""
    return f"rejects_{split}.jsonl" if pack_size is None else f"rejects_{split}_{pack_size}.jsonl"
