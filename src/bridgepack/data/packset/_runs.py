"""Run ids: every file of a pack set names the ``bridgepack pack`` run that wrote it; readers refuse a mix.

A split's set is three files, committed one after another (metadata, rejects, packed file last), so a
run killed between two renames leaves files of two runs side by side. Bridge's six metadata values
cannot tell them apart when both runs packed the same lengths (the same data in another order), so each
file carries the run's id::

    {N}_metadata.jsonl        [{...six keys..., "bridgepack": {"split": "training", "run_id": "9f2c..."}},
    ...]
    training_{N}.idx.parquet  Parquet key/value metadata  bridgepack.run_id = 9f2c...
    rejects_training_{N}.jsonl  {"source": ..., "reason": ..., "run_id": "9f2c..."}  (every line)

The metadata file is shared by the splits: each split's entry carries its own run's id, and a packed
file is compared with the entry of its split. :func:`check_run_ids` is the one check every reader calls
(``inspect``, ``doctor --packed``, ``train``, ``diff``/``verify``, ``fingerprint --check``). A set with
no run id anywhere was written before run ids existed and is accepted as before; a set where some files
carry one and others do not is refused like a mix. A packed file read without a sidecar has nothing to
be compared with and is read as before.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

import orjson

from bridgepack._parquet import open_parquet
from bridgepack.data.packset._metadata import RUN_ID, MetadataEntry, PackingMetadata
from bridgepack.data.packset._names import SPLITS, hf_split, metadata_filename, packed_names, rejects_filename
from bridgepack.data.packset._schema import LEGACY_SUFFIX, Layout
from bridgepack.data.packset._sets import check_shard_count
from bridgepack.errors import BridgepackError, DataError, param

#: The Parquet key/value metadata key holding the run id.
PARQUET_RUN_ID = b"bridgepack.run_id"
#: Bridge's sidecar name, ``{N}_metadata.jsonl``.
_SIDECAR_NAME = re.compile(r"^(?P<size>\d+)_metadata\.jsonl$")


def new_run_id() -> str:
    """A fresh run id (random: two runs never share one, whatever their host or PID)."""
    return uuid.uuid4().hex


def parquet_run_id(path: str | os.PathLike[str]) -> str | None:
    """The run id in a packed Parquet file's footer, or ``None`` (legacy, another tool). A file that is
    not Parquet (cut short, overwritten) is refused here as every reader refuses it, not taken for a file
    without a run id, which would read as a mix of two runs."""
    if os.fspath(path).lower().endswith(LEGACY_SUFFIX):  # a legacy packed file: no footer, no run id
        return None
    meta = open_parquet(path).metadata.metadata or {}
    value = meta.get(PARQUET_RUN_ID)
    return value.decode(errors="replace") if value else None


def rejects_run_id(path: Path) -> tuple[bool, str | None]:
    """``(has records, run id of the first record)`` of a rejects file; ``(False, None)`` if absent/empty."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(1 << 20)
    except OSError:
        return False, None
    if not first.strip():
        return False, None
    try:
        record = orjson.loads(first)
    except orjson.JSONDecodeError:
        return True, None
    value = record.get(RUN_ID) if isinstance(record, dict) else None
    return True, value if isinstance(value, str) else None


def _shown(run_id: str | None) -> str:
    return f"run {run_id[:12]}" if run_id else "no run id"


def _mixed(a: str, a_id: str | None, b: str, b_id: str | None) -> DataError:
    return DataError(
        f"{a} ({_shown(a_id)}) and {b} ({_shown(b_id)}) come from different bridgepack pack runs "
        "(a run was stopped between its commit steps, or files were copied together); "
        f"pack again with {param('overwrite')}"
    )


def _known_run_ids(directory: Path) -> set[str | None]:
    """Run ids of every entry of every sidecar in ``directory`` (a legacy ``rejects_{split}.jsonl`` was
    shared by the pack sizes of a folder)."""
    known: set[str | None] = set()
    for sidecar in [*directory.glob("*_metadata.jsonl"), *directory.glob("*.hf.jsonl")]:
        try:
            known.update(entry.run_id for entry in PackingMetadata.read(sidecar).entries)
        except BridgepackError:
            continue
    return known


def _entry_of(meta: str, index: int, entry: MetadataEntry, name: str, split: str | None) -> None:
    """Refuse a sidecar entry that is not the one of packed file ``name`` (of ``split``, as its name says):
    one of another pack size (the file's name, or the sidecar's own name, says another: Bridge looks for
    ``{N}_metadata.jsonl``), or of another split (the sidecar has no entry for this one)."""
    named = packed_names([name]).pack_size
    if named is not None and named != entry.pack_size:
        raise DataError(
            f"{meta}: entry {index}: pack_size {entry.pack_size} differs from the file name's {named} "
            f"({name}: a sidecar of another pack size)"
        )
    sidecar = _SIDECAR_NAME.match(Path(meta).name)
    if sidecar is not None and int(sidecar["size"]) != entry.pack_size:
        raise DataError(
            f"{meta}: entry {index} holds packs of {entry.pack_size} tokens, but the sidecar is named for "
            f"{sidecar['size']}: Bridge looks for {Path(meta).with_name(metadata_filename(entry.pack_size))}"
        )
    if split in SPLITS and entry.split is not None and entry.split != split:
        raise DataError(
            f"{meta}: holds no entry of the {split} split for {name} (entry {index} is the {entry.split} "
            "split's: a sidecar of another split)"
        )


def _rejects_of(directory: Path, entry: MetadataEntry) -> tuple[Path, bool]:
    """The rejects file of an entry's set and whether it is a legacy one shared by pack sizes (a set of
    Bridge's layout written before rejects files were named by size)."""
    split = str(entry.split)
    if entry.recorded("layout") == Layout.padding_free.value:
        return directory / rejects_filename(split), False
    own = directory / rejects_filename(split, entry.pack_size)
    legacy = directory / rejects_filename(split)
    return (legacy, True) if not own.exists() and legacy.exists() else (own, False)


def check_run_ids(
    files: Sequence[str | os.PathLike[str]],
    metadata_path: str | os.PathLike[str] | None,
    metadata: PackingMetadata | None = None,
) -> None:
    """The one check every reader makes before it reads a set: its files and sidecar are one set, else exit
    1 naming them.

    Each file is compared with the sidecar entry of its split (by its name, else Bridge's order, else the
    only entry): the entry must be of its pack size and split (:func:`_entry_of`), of its run, and so must
    that set's rejects file beside the sidecar; a sharded split must have as many shards as its entry
    records (:func:`~bridgepack.data.packset.check_shard_count`). ``metadata`` is the sidecar, when the caller
    has read it already.
    """
    if metadata_path is None:
        return
    meta = os.fspath(metadata_path)
    if metadata is None:
        metadata = PackingMetadata.read(meta)
    directory = Path(meta).parent
    first: tuple[int, MetadataEntry] | None = None
    for file in files:
        name = os.fspath(file)
        split = packed_names([name]).split or hf_split(name)
        picked = metadata.pick(split)
        if picked is None:
            continue
        index, entry = picked
        first = first or picked
        _entry_of(meta, index, entry, name, split)
        ours, theirs = parquet_run_id(name), entry.run_id
        if ours != theirs:
            raise _mixed(name, ours, f"{meta} entry {index}", theirs)
        if theirs is None or entry.split is None:
            continue
        rejects, shared = _rejects_of(directory, entry)
        has_records, rejects_id = rejects_run_id(rejects)
        known = _known_run_ids(directory) if shared else set()
        if has_records and rejects_id != theirs and rejects_id not in known:
            raise _mixed(os.fspath(rejects), rejects_id, f"{meta} entry {index}", theirs)
    if first is not None:
        check_shard_count(files, meta, first[0], first[1].record)
