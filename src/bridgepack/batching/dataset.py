"""``PackedDataset``: Bridge's packed item per row, read memory-mapped from packed Parquet (bridge-format §5).

An item is what Bridge 0.6.2's ``GPTSFTPackedParquetDataset.__getitem__`` returns, as numpy arrays::

    input_ids      [10, 11, 12, 13, 20, 21, 22, 23]     the stored pack
    seq_boundaries [0, 4, 8]                           seq_start_id + [len(input_ids)]
    loss_mask      [ 1,  1,  1,  0,  1,  1,  1,  0]     as stored (rolled: supervises the next token)

A negative index is a padding row the sampler adds to a last incomplete global batch: Bridge wraps it
(``-1`` is the last row) and zeroes its loss mask, so the row takes part in the step but adds no loss.
"""

from __future__ import annotations

import os
from typing import TypedDict

import numpy as np

from bridgepack.data.packed import PackedReader


class PackedItem(TypedDict):
    """One pack as the collator takes it (Bridge's item keys)."""

    input_ids: np.ndarray
    seq_boundaries: np.ndarray
    loss_mask: np.ndarray


class PackedDataset:
    """Random access to packs of a packed Parquet location (file, glob or directory), no whole-file load.

    >>> ds = PackedDataset("out/training_4096.idx.parquet")     # doctest: +SKIP
    >>> ds[0]["seq_boundaries"], ds[-1]["loss_mask"].any()       # padding row: no loss
    (array([   0, 1771, 4001, 4097]), False)
    """

    def __init__(self, location: str | os.PathLike[str], *, validate: bool = True) -> None:
        # Each row group is checked once, when first decoded: a broken row fails naming file and row
        # instead of turning into silently wrong boundaries.
        self.reader = PackedReader(location, validate=validate)

    def __len__(self) -> int:
        return len(self.reader)

    def __getitem__(self, index: int) -> PackedItem:
        index = int(index)
        row = self.reader.row(index)
        boundaries = np.empty(len(row.seq_start_id) + 1, dtype=np.int64)
        boundaries[:-1] = row.seq_start_id
        boundaries[-1] = len(row.input_ids)
        loss_mask = np.zeros(len(row.loss_mask), np.int64) if index < 0 else row.loss_mask.astype(np.int64)
        return {
            "input_ids": row.input_ids.astype(np.int64),
            "seq_boundaries": boundaries,
            "loss_mask": loss_mask,
        }
