"""Open packed Parquet for training and check it against what the run was told (pack size, pad multiple).

The whole file is scanned once, a row group at a time (the reader checks the bridge-format §3 invariants of
each group as it decodes it), by the scan ``inspect`` and the doctor share
(:class:`~bridgepack.data.packed._reader.PackedScan`), to learn each pack's runtime size, the largest token
id,
the longest sequence and, when the metadata does not record it, the EOS id;
packs are read again by index (:class:`~bridgepack.batching.PackedDataset`) when a step needs them, through
the reader's row-group cache, so memory stays bounded by a few row groups.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from bridgepack.batching import PackedDataset
from bridgepack.data.packed import PackedScan, PackedSource, RecordedCheck, check_pack_capacity
from bridgepack.data.packset import LEGACY_SUFFIX, PackingMetadata, check_run_ids, find_metadata
from bridgepack.errors import DataError, UsageError, param, where


@dataclass(frozen=True)
class TrainingData:
    """A packed dataset ready for training, with the facts the steps need.

    ``runtime_sizes[i]`` is pack ``i``'s runtime tokens (stored tokens minus one per sequence, bridge-format
    §2).
    """

    dataset: PackedDataset
    pack_size: int
    pad_multiple: int | None
    eos_id: int
    runtime_sizes: np.ndarray
    num_sequences: int
    max_sequences_per_pack: int
    longest_sequence: int
    max_token_id: int
    metadata_path: Path | None
    metadata: dict[str, Any] | None

    @property
    def num_rows(self) -> int:
        return len(self.dataset)


def data_vocab(location: str | os.PathLike[str]) -> int:
    """The smallest vocabulary the packed data at ``location`` fits: its largest token id + 1.

    What ``bridgepack train`` builds its model with when no ``--vocab`` is given: a real tokenizer's ids
    (Qwen3's reach 151,645) must all have an embedding row, and a fixed default refused every one of them.
    Read from the Parquet footers' statistics when every row group carries them (bridgepack, pyarrow and
    Bridge write them), so the tokens are read once, by the trainer's own checked scan, which refuses any id
    past it; else one pass, a block at a time.
    """
    source = PackedSource(location)
    try:
        top = (
            None if source.location.lower().endswith(LEGACY_SUFFIX) else _largest_id_in_footers(source.paths)
        )
        if top is None:
            top = max(
                (int(block.input_ids.max()) for block in source.blocks() if block.input_ids.size), default=0
            )
    finally:
        source.close()
    return top + 1


def _largest_id_in_footers(paths: list[str]) -> int | None:
    """The largest ``input_ids`` value the footers' column statistics state, or ``None`` when a row group
    states none (or a negative id: the checked pass then says where)."""
    top: int | None = None
    for path in paths:
        footer = pq.read_metadata(path)
        for g in range(footer.num_row_groups):
            group = footer.row_group(g)
            column = next(
                (
                    group.column(i)
                    for i in range(group.num_columns)
                    if group.column(i).path_in_schema.startswith("input_ids.")
                ),
                None,
            )
            stats = column.statistics if column is not None and column.is_stats_set else None
            if stats is None or not stats.has_min_max or int(stats.min) < 0:
                return None
            top = max(int(stats.max), top if top is not None else 0)
    return top


def load_training_data(
    location: str | os.PathLike[str],
    *,
    pack_size: int | None,
    pad_multiple: int | None,
    vocab: int,
) -> TrainingData:
    """Open ``location`` and check it: metadata vs flags, packs within the pack size, ids below ``vocab``.

    Raises :class:`DataError` (exit 1) on a mismatch, naming the file, the row and the two values.
    """
    dataset = PackedDataset(location)
    reader = dataset.reader
    meta_path = find_metadata(reader.paths)
    combined: dict[str, Any] | None = None
    sidecar = PackingMetadata()
    if meta_path is not None:
        sidecar = PackingMetadata.read(meta_path)
        check_run_ids(reader.paths, meta_path, sidecar)
        combined = dict(sidecar.combined())
        meta_size = int(combined["pack_size"])
        if pack_size is not None and pack_size != meta_size:
            raise DataError(
                f"{meta_path}: packed for pack_size={meta_size}, but {param('pack_size')} is {pack_size} "
                "(re-pack for the new size or fix the flag)"
            )
        pack_size = meta_size
        meta_mult = sidecar.record().get("pad_seq_to_mult")
        if pad_multiple is not None and meta_mult is not None and int(meta_mult) != pad_multiple:
            raise DataError(
                f"{meta_path}: packed with pad_seq_to_mult={meta_mult}, but {param('pad_multiple')} is "
                f"{pad_multiple} "
                "(changing CP/TP/SP means re-packing, docs/bridge-format.md §7)"
            )
        if pad_multiple is None and meta_mult is not None:
            pad_multiple = int(meta_mult)
    scan = PackedScan(
        pad_multiple=pad_multiple or 1,
        vocab=vocab,
        eos_id=sidecar.eos_id,
        infer_eos=True,
        keep_pack_runtime=True,
    )
    with RecordedCheck(reader.location, reader.paths, meta_path, sidecar if meta_path else None) as recorded:
        for block in reader.iter_blocks(hashed=recorded.active):
            facts = scan.add(block)
            recorded.add(block)
            if facts.multiple_misses.size:
                k = int(facts.multiple_misses[0])
                row = block.first_row + facts.sequence_row(k)
                raise DataError(
                    f"{where(block.path, row=row, field='seq_start_id')}: a "
                    f"sequence of {int(facts.runtime[k])} runtime tokens is not a multiple of "
                    f"{param('pad_multiple')} {pad_multiple} "
                    "(the data was packed with another pad_seq_to_mult)"
                )
            if pack_size is not None:
                check_pack_capacity(block, pack_size, facts.pack_runtime)
            if facts.over_vocab is not None:
                pos = facts.over_vocab
                row = block.first_row + facts.token_row(pos)
                raise DataError(
                    f"{where(block.path, row=row, field='input_ids')}: token id "
                    f"{int(block.input_ids[pos])} does not fit {param('vocab')} {vocab}"
                )
        recorded.finish()
    runtime_sizes = np.concatenate(scan.pack_runtime)
    if pack_size is None:
        pack_size = int(runtime_sizes.max())
    longest = scan.stats.dataset_max_seqlen
    if longest < 1:
        raise DataError(f"{reader.location}: every sequence is a lone EOS (nothing to train on)")
    eos_id = scan.eos_id
    assert eos_id is not None
    return TrainingData(
        dataset=dataset,
        pack_size=pack_size,
        pad_multiple=pad_multiple,
        eos_id=eos_id,
        runtime_sizes=runtime_sizes,
        num_sequences=scan.stats.sequences,
        max_sequences_per_pack=scan.stats.max_samples_per_bin,
        longest_sequence=longest,
        max_token_id=scan.max_token_id,
        metadata_path=meta_path,
        metadata=combined,
    )


def check_pad_to(data: TrainingData, pad_to: int | None) -> int:
    """The padded-mode row length: ``pad_to`` or the pack size; it must hold the longest sequence."""
    length = data.pack_size if pad_to is None else pad_to
    if length < data.longest_sequence:
        raise UsageError(
            f"{param('pad_to')} {length} is shorter than the longest sequence "
            f"({data.longest_sequence} runtime tokens)"
        )
    return length
