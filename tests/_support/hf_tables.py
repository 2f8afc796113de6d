"""Arrow tables of list columns whose tokens name their origin, for ``bridgepack.trl`` tests."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa


def token_table(lengths: list[int], cuts: list[int], large: bool, wide: bool, seed: int) -> pa.Table:
    """``input_ids`` (token ``k`` of the whole table is ``k + 1``: each token names its origin) and a random
    ``completion_mask``, in record batches cut at ``cuts``."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.arange(1, offsets[-1] + 1, dtype=np.int64 if wide else np.int32)
    mask = rng.integers(0, 2, size=ids.size, dtype=np.int8)
    make = pa.LargeListArray if large else pa.ListArray
    off = pa.array(offsets, pa.int64() if large else pa.int32())
    table = pa.table(
        {"input_ids": make.from_arrays(off, ids), "completion_mask": make.from_arrays(off, mask)}
    )
    bounds = sorted({0, len(lengths), *[c for c in cuts if 0 < c < len(lengths)]})
    return pa.Table.from_batches(
        [b for lo, hi in itertools.pairwise(bounds) for b in table.slice(lo, hi - lo).to_batches()],
        schema=table.schema,
    )
