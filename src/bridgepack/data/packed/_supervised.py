"""The first sequences of packed data with the tokens each one is trained on, in either layout.

A user checks the loss masks before a launch by reading what will be supervised. Both layouts store
that differently, and this module turns both into one per-token answer, ``supervised[t]``: "token ``t`` of
the sequence is a training target".

* **Bridge** (bridge-format §2-3): the stored mask is rolled left by one, ``loss_mask[j]`` means *label*
``j``, i.e.
  token ``j + 1``, is supervised; the last stored position of a sequence has no label. So
  ``supervised[t] = loss_mask[t - 1]`` for ``t >= 1`` and the first token is never a target::

      input_ids   [<u> hi <eos> <a> hello <eos>]
      loss_mask   [ 0   0   0    1    1     0  ]     stored, rolled
      supervised  [ 0   0   0    0    1     1  ]     'hello <eos>' is what the model learns to predict

* **Hugging Face flattened** (``--layout padding-free``): ``labels[t]`` is the token itself where it is a
  target and -100 elsewhere (the model shifts), so ``supervised[t] = labels[t] != -100``; ``seq_lengths``
  splits a row.

Only the row groups needed for the first ``k`` sequences are read; each is checked first (Bridge rows with
:func:`~bridgepack.data.packed._reader.validate_block`; HF rows for matching lengths and labels).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bridgepack._parquet import open_parquet, read_row_group
from bridgepack.data.packed._reader import (
    PackedBlock,
    _first_true,
    _list_column,
    resolve_packed_paths,
    validate_block,
)
from bridgepack.data.packset import IGNORE_INDEX, REQUIRED_COLUMNS, Layout, hf_data_dir
from bridgepack.errors import DataError, UsageError, param, where

#: The columns of the flattened layout that say where sequences end and what they train on.
HF_COLUMNS: tuple[str, ...] = ("input_ids", "labels", "seq_lengths")


@dataclass(frozen=True)
class PackedSequence:
    """One sequence of a pack: where it is, its token ids and which of them are training targets."""

    path: str
    layout: Layout
    #: Row (pack) of the file, 0-based, and the sequence's index within that pack.
    row: int
    index: int
    #: Offset of the sequence's first token in its pack.
    start: int
    input_ids: np.ndarray
    supervised: np.ndarray


def bridge_supervised(stored_mask: np.ndarray) -> np.ndarray:
    """Per-token targets of one sequence from Bridge's rolled stored mask (``[0 1 1 0]`` -> ``[0 0 1 1]``)."""
    supervised = np.zeros(len(stored_mask), dtype=bool)
    supervised[1:] = stored_mask[:-1] != 0
    return supervised


def layout_of(path: str, schema: pa.Schema) -> Layout:
    """Bridge's or the padding-free layout, from a file's columns; a DataError naming them otherwise."""
    names = set(schema.names)
    if names.issuperset(REQUIRED_COLUMNS):
        return Layout.bridge
    if names.issuperset(HF_COLUMNS):
        return Layout.padding_free
    raise DataError(
        f"{path}: neither Bridge's packed layout ({', '.join(REQUIRED_COLUMNS)}) nor the flattened "
        f"layout ({', '.join(HF_COLUMNS)}); found columns: {', '.join(schema.names)}"
    )


def _open(path: str) -> pq.ParquetFile:
    return open_parquet(path, memory_map=True)


def _groups(path: str, handle: pq.ParquetFile, columns: tuple[str, ...]) -> Iterator[tuple[int, pa.Table]]:
    first = 0
    for group in range(handle.metadata.num_row_groups):
        table = read_row_group(handle, path, group, list(columns))
        yield first, table
        first += table.num_rows


def _bridge_sequences(path: str, handle: pq.ParquetFile) -> Iterator[PackedSequence]:
    for first, table in _groups(path, handle, REQUIRED_COLUMNS):
        ids = _list_column(path, table, "input_ids", first)
        mask = _list_column(path, table, "loss_mask", first)
        starts = _list_column(path, table, "seq_start_id", first)
        block = PackedBlock(path, first, first, ids[0], ids[1], mask[0], mask[1], starts[0], starts[1])
        validate_block(block, allow_empty_sequences=False)
        for r in range(block.num_rows):
            row = block.row(r)
            bounds = [*row.seq_start_id.tolist(), len(row.input_ids)]
            for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
                yield PackedSequence(
                    path, Layout.bridge, first + r, i, lo,
                    row.input_ids[lo:hi].astype(np.int64), bridge_supervised(row.loss_mask[lo:hi]),
                )  # fmt: skip


def _check_hf(
    path: str,
    first: int,
    row_len: np.ndarray,
    label_off: np.ndarray,
    len_off: np.ndarray,
    lengths: np.ndarray,
    ids: np.ndarray,
    labels: np.ndarray,
) -> None:
    """Raise on the first flattened row whose labels or sequence lengths do not fit its tokens."""
    rows = np.arange(len(row_len))

    def fail(bad: np.ndarray, field: str, message: str) -> None:
        row = _first_true(bad)
        if row is not None:
            raise DataError(f"{where(path, row=first + row, field=field)}: {message}")

    fail(np.diff(label_off) != row_len, "labels", "length differs from len(input_ids)")
    fail(np.diff(len_off) == 0, "seq_lengths", "is empty (a pack holds at least one sequence)")
    row_of_length = np.repeat(rows, np.diff(len_off))
    fail(np.isin(rows, row_of_length[lengths <= 0]), "seq_lengths", "holds a length < 1")
    fail(np.add.reduceat(lengths, len_off[:-1]) != row_len, "seq_lengths", "do not add up to len(input_ids)")
    wrong = (labels != IGNORE_INDEX) & (labels != ids)
    fail(np.isin(rows, np.repeat(rows, row_len)[wrong]), "labels", f"must be the token id or {IGNORE_INDEX}")


def _hf_sequences(path: str, handle: pq.ParquetFile) -> Iterator[PackedSequence]:
    for first, table in _groups(path, handle, HF_COLUMNS):
        id_off, ids = _list_column(path, table, "input_ids", first)
        label_off, labels = _list_column(path, table, "labels", first)
        len_off, lengths = _list_column(path, table, "seq_lengths", first)
        row_len = np.diff(id_off)
        _check_hf(path, first, row_len, label_off, len_off, lengths, ids, labels)
        for r in range(len(row_len)):
            seq = lengths[len_off[r] : len_off[r + 1]]
            starts = np.concatenate([[0], np.cumsum(seq)[:-1]])
            for i, (lo, n) in enumerate(zip(starts.tolist(), seq.tolist(), strict=True)):
                a, b = int(id_off[r]) + lo, int(id_off[r]) + lo + n
                yield PackedSequence(
                    path,
                    Layout.padding_free,
                    first + r,
                    i,
                    lo,
                    ids[a:b].astype(np.int64),
                    labels[a:b] != IGNORE_INDEX,
                )


def first_sequences(location: str | os.PathLike[str], sequences: int) -> list[PackedSequence]:
    """The first ``sequences`` sequences of the packed files ``location`` names (files sorted, rows in
    order)."""
    if sequences < 0:
        raise UsageError(f"{param('sequences')} must be >= 0, got {sequences}")
    out: list[PackedSequence] = []
    for path in resolve_packed_paths(hf_data_dir(location)):
        if len(out) >= sequences:
            break
        handle = _open(path)
        try:
            reader = (
                _bridge_sequences if layout_of(path, handle.schema_arrow) is Layout.bridge else _hf_sequences
            )
            for sequence in reader(path, handle):
                if len(out) >= sequences:
                    break
                out.append(sequence)
        finally:
            handle.close()
    return out


__all__ = ["HF_COLUMNS", "PackedSequence", "bridge_supervised", "first_sequences", "layout_of"]
