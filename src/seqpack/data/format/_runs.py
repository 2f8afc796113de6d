"""Run ids: every file of a pack set names the ``seqpack pack`` run that wrote it; readers refuse a mix.

A split's set is three files, committed one after another (metadata, rejects, packed file last), so a
run killed between two renames leaves files of two runs side by side. Bridge's six metadata values
cannot tell them apart when both runs packed the same lengths (the same data in another order), so each
file carries the run's id::

    {N}_metadata.jsonl        [{...six keys..., "seqpack": {"split": "training", "run_id": "9f2c..."}}, ...]
    training_{N}.idx.parquet  Parquet key/value metadata  seqpack.run_id = 9f2c...
    rejects_training.jsonl    {"source": ..., "reason": ..., "run_id": "9f2c..."}  (every line)

The metadata file is shared by the splits: each split's entry carries its own run's id, and a packed
file is compared with the entry of its split. :func:`check_run_ids` is the one check every reader calls
(``inspect``, ``doctor --packed``, ``train``, ``diff``/``verify``, ``fingerprint --check``). A set with
no run id anywhere was written before run ids existed and is accepted as before; a set where some files
carry one and others do not is refused like a mix. A packed file read without a sidecar has nothing to
be compared with and is read as before.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import orjson

from seqpack._parquet import open_parquet
from seqpack.data.format._metadata import RUN_ID, PackingMetadata
from seqpack.data.format._names import hf_split, packed_names, rejects_filename
from seqpack.errors import DataError, SeqpackError, param

#: The Parquet key/value metadata key holding the run id.
PARQUET_RUN_ID = b"seqpack.run_id"


def new_run_id() -> str:
    """A fresh run id (random: two runs never share one, whatever their host or PID)."""
    return uuid.uuid4().hex


def parquet_run_id(path: str | os.PathLike[str]) -> str | None:
    """The run id in a packed Parquet file's footer, or ``None`` (legacy, another tool). A file that is
    not Parquet (cut short, overwritten) is refused here as every reader refuses it, not taken for a file
    without a run id, which would read as a mix of two runs."""
    if os.fspath(path).lower().endswith(".npy"):  # a legacy packed file: no footer, no run id
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
        f"{a} ({_shown(a_id)}) and {b} ({_shown(b_id)}) come from different seqpack pack runs "
        "(a run was stopped between its commit steps, or files were copied together); "
        f"pack again with {param('overwrite')}"
    )


def _known_run_ids(directory: Path) -> set[str | None]:
    """Run ids of every entry of every sidecar in ``directory`` (a rejects file is shared by pack sizes)."""
    known: set[str | None] = set()
    for sidecar in [*directory.glob("*_metadata.jsonl"), *directory.glob("*.hf.jsonl")]:
        try:
            known.update(entry.run_id for entry in PackingMetadata.read(sidecar).entries)
        except SeqpackError:
            continue
    return known


def check_run_ids(
    files: Sequence[str | os.PathLike[str]],
    metadata_path: str | os.PathLike[str] | None,
    metadata: PackingMetadata | None = None,
) -> None:
    """Refuse (exit 1, naming the files) packed ``files`` and their sidecar if they come from two runs.

    Each file is compared with the sidecar entry of its split (by its name, else Bridge's order, else the
    only entry), and with that split's rejects file beside the sidecar. ``metadata`` is the sidecar,
    when the caller has read it already.
    """
    if metadata_path is None:
        return
    meta = os.fspath(metadata_path)
    if metadata is None:
        metadata = PackingMetadata.read(meta)
    directory = Path(meta).parent
    for file in files:
        name = os.fspath(file)
        picked = metadata.pick(packed_names([name]).split or hf_split(name))
        if picked is None:
            continue
        index, entry = picked
        ours, theirs = parquet_run_id(name), entry.run_id
        if ours != theirs:
            raise _mixed(name, ours, f"{meta} entry {index}", theirs)
        split = entry.split
        if theirs is None or split is None:
            continue
        rejects = directory / rejects_filename(split)
        has_records, rejects_id = rejects_run_id(rejects)
        if has_records and rejects_id != theirs and rejects_id not in _known_run_ids(directory):
            raise _mixed(os.fspath(rejects), rejects_id, f"{meta} entry {index}", theirs)
