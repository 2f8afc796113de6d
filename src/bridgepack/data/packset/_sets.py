"""Where a pack set's files are, and that a sharded split's folder holds its shards and nothing else.

A sharded split (``bridgepack pack --engine ray``) is a folder beside its sidecar::

    out/512_metadata.jsonl
    out/training_512/training_512-00000.idx.parquet, training_512-00001.idx.parquet, ...

Bridge trains on every ``*.parquet``/``*.pq`` file of that folder, in name order. A file copied in
(``training_512/old.parquet``) was read by Bridge as packs of the set, while bridgepack's readers, no longer
seeing a folder of shards only, looked for the sidecar inside it, found none and passed the set unchecked.
So a folder holding any shard is a sharded split, its sidecar is beside it, and every reader refuses
(exit 1) a folder with an entry that is not one of its shards, a gap in the numbering, or fewer shards
than the sidecar records; hidden files are left alone (neither Bridge nor bridgepack reads them).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridgepack.data.packset._names import metadata_filename, packed_names, shard_filename, sharded_dirname
from bridgepack.data.packset._schema import PARQUET_SUFFIXES
from bridgepack.errors import DataError

#: A shard as bridgepack names it: ``{split}_{N}-{index:05d}.idx.parquet``.
_SHARD = re.compile(r"^(?P<split>.+)_(?P<size>\d+)-(?P<index>\d{5,})\.idx\.parquet$")
#: The key of bridgepack's record naming the engine of a sharded run, and its count of output shards.
ENGINE_KEY, SHARD_COUNT_KEY = "engine", "output_shards"


@dataclass(frozen=True)
class ShardedDir:
    """A sharded split's folder: its split and pack size (from the folder's name when it is the split's,
    else from the shards' names)."""

    directory: Path
    split: str
    pack_size: int

    def index_of(self, name: str) -> int | None:
        """The shard number of ``name`` when it is a shard of this split, else ``None``."""
        match = _SHARD.match(name)
        if match is None or (match["split"], int(match["size"])) != (self.split, self.pack_size):
            return None
        index = int(match["index"])
        return index if name == shard_filename(self.split, self.pack_size, index) else None

    def shard(self, index: int) -> str:
        return shard_filename(self.split, self.pack_size, index)


def _visible(directory: Path) -> list[str]:
    try:
        return sorted(e.name for e in os.scandir(directory) if not e.name.startswith("."))
    except OSError:
        return []


def sharded_dir(paths: Sequence[str | os.PathLike[str]]) -> ShardedDir | None:
    """The sharded split ``paths`` are (one folder) or lie in (its files), else ``None``: a folder is one
    when it holds a file named as a shard."""
    if not paths:
        return None
    first = Path(paths[0])
    if len(paths) == 1 and first.is_dir():
        directory, names = first, _visible(first)
    else:
        directory, names = first.parent, [Path(p).name for p in paths]
    found = [(m["split"], int(m["size"])) for m in map(_SHARD.match, names) if m]
    if not found:
        return None
    own = next((key for key in found if sharded_dirname(*key) == directory.name), None)
    split, size = own or Counter(found).most_common(1)[0][0]
    return ShardedDir(directory, split, size)


def _packed_files(paths: Sequence[str | os.PathLike[str]]) -> Sequence[str | os.PathLike[str]]:
    """The packed files ``paths`` name: a directory's own Parquet files (Bridge's rule), else ``paths``."""
    if len(paths) == 1 and Path(paths[0]).is_dir():
        return [name for name in _visible(Path(paths[0])) if name.lower().endswith(PARQUET_SUFFIXES)]
    return paths


def is_sharded(paths: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether ``paths`` are the shards of a sharded split (``training_4096-00000.idx.parquet``, ...), or
    lie in or name the folder holding them."""
    return sharded_dir(paths) is not None


def find_metadata(paths: Sequence[str | os.PathLike[str]], pack_size: int | None = None) -> Path | None:
    """The sidecar beside packed data: ``{N}_metadata.jsonl`` in the data's directory (beside a sharded
    split's folder).

    ``paths`` are the packed files (or one directory holding them); ``N`` is ``pack_size`` when given,
    else what the packed files' names say (a directory's own files: every reader, given the folder or its
    files, looks for the same sidecar). Without an ``N``, the directory's only ``*_metadata.jsonl`` is
    taken. ``None`` when there is no such file (or several candidates and no ``N``).
    """
    if not paths:
        return None
    first = Path(paths[0])
    directory = first if first.is_dir() else first.parent
    shards = sharded_dir(paths)
    size = pack_size
    if shards is not None:  # a sharded split's directory sits beside its sidecar
        directory = shards.directory.parent
        size = size if size is not None else shards.pack_size
    elif size is None:
        size = packed_names(_packed_files(paths)).pack_size
    if size is not None:
        candidate = directory / metadata_filename(size)
        return candidate if candidate.is_file() else None
    found = sorted(directory.glob("*_metadata.jsonl"))
    return found[0] if len(found) == 1 else None


def check_shard_dir(directory: str | os.PathLike[str]) -> None:
    """Refuse (exit 1) a sharded split's folder holding anything but its shards, numbered from 0 without a
    gap; a folder that holds no shard is not a sharded split and is left alone."""
    shards = sharded_dir([directory])
    if shards is None:
        return
    where = Path(directory)
    indices = []
    for name in _visible(where):
        index = shards.index_of(name)
        if index is None:
            raise DataError(
                f"{where / name}: not a shard of the set in {where} (its shards are "
                f"{shards.shard(0)}, {shards.shard(1)}, ...); Bridge reads every .parquet and .pq file of "
                "the folder as packs of the set: move it out"
            )
        indices.append(index)
    gap = next((i for i, index in enumerate(sorted(indices)) if i != index), None)
    if gap is not None:
        raise DataError(
            f"{where}: {shards.shard(gap)} is missing (the shards are numbered from 0 without a gap; "
            f"{len(indices)} found)"
        )


def check_shard_count(
    files: Sequence[str | os.PathLike[str]],
    metadata_path: str | os.PathLike[str],
    index: int,
    record: Mapping[str, object] | None,
) -> None:
    """Refuse (exit 1) a sharded split read with fewer shards than its sidecar entry ``index`` records
    (the last one deleted, or one shard given alone); ``record`` is the entry's bridgepack record."""
    engine = None if record is None else record.get(ENGINE_KEY)
    recorded = engine.get(SHARD_COUNT_KEY) if isinstance(engine, Mapping) else None
    shards = sharded_dir(files)
    if not isinstance(recorded, int) or shards is None:
        return
    given = {i for i in (shards.index_of(Path(f).name) for f in files) if i is not None}
    extra = min((i for i in given if i >= recorded), default=None)
    if extra is not None:
        raise DataError(
            f"{shards.directory / shards.shard(extra)}: not a shard of the set ({os.fspath(metadata_path)} "
            f"entry {index} records {recorded} shards, numbered from 0); move it out"
        )
    missing = next((i for i in range(recorded) if i not in given), None)
    if missing is not None:
        raise DataError(
            f"{shards.directory}: {len(given)} of the set's {recorded} shards ({shards.shard(missing)} is "
            f"missing; {os.fspath(metadata_path)} entry {index} records {recorded}); give the set's folder, "
            "whole"
        )
