"""Pass 2: gather each pack's tokens from the scratch store and stream Bridge's packed Parquet (spec §3).

For every row group of 500 packs a numba kernel concatenates the pack's stored examples into flat
buffers, rolls each example's mask left by one (the last position of every example becomes 0), and
records where each example starts. Pack of examples ``[5 6 2]`` (mask ``[0 1 1]``) and ``[7 2]``
(mask ``[1 1]``)::

    input_ids    [5 6 2 7 2]
    loss_mask    [1 1 0 1 0]      stored mask[j] = "label j (token j+1) is a target"
    seq_start_id [0 3]

The buffers are wrapped zero-copy as Arrow list arrays and written as one row group each, so memory is
bounded by one row group whatever the dataset size.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

#: Bridge's packed Parquet schema, column order and types (spec §3).
PACKED_SCHEMA = pa.schema(
    [
        ("input_ids", pa.list_(pa.int64())),
        ("loss_mask", pa.list_(pa.int8())),
        ("seq_start_id", pa.list_(pa.int64())),
    ]
)
#: Rows (packs) per Parquet row group, as Bridge writes them (spec §3).
ROW_GROUP_SIZE = 500
COMPRESSION = "snappy"


@numba.njit(cache=True)
def _gather_kernel(
    tokens: np.ndarray,
    mask: np.ndarray,
    offsets: np.ndarray,
    items: np.ndarray,
    item_lo: int,
    item_hi: int,
    out_ids: np.ndarray,
    out_mask: np.ndarray,
    out_starts: np.ndarray,
    pack_of_item: np.ndarray,
    row_token_offsets: np.ndarray,
) -> None:
    o = 0
    for t in range(item_lo, item_hi):
        i = items[t]
        a = offsets[i]
        b = offsets[i + 1]
        out_starts[t - item_lo] = o - row_token_offsets[pack_of_item[t - item_lo]]
        for j in range(a, b):
            out_ids[o] = tokens[j]
            out_mask[o] = mask[j + 1] if j + 1 < b else 0
            o += 1


def write_packed(
    path: Path,
    tokens: np.ndarray,
    mask: np.ndarray,
    offsets: np.ndarray,
    items: np.ndarray,
    pack_offsets: np.ndarray,
    on_row_group: Callable[[int, int], None] | None = None,
) -> None:
    """Write packs ``pack_offsets`` over ``items`` (indices of examples in the store) to ``path``."""
    num_packs = len(pack_offsets) - 1
    example_len = np.diff(offsets)
    with pq.ParquetWriter(path, PACKED_SCHEMA, compression=COMPRESSION) as writer:
        for p0 in range(0, num_packs, ROW_GROUP_SIZE):
            p1 = min(p0 + ROW_GROUP_SIZE, num_packs)
            lo, hi = int(pack_offsets[p0]), int(pack_offsets[p1])
            lens = example_len[items[lo:hi]]
            seq_counts = np.diff(pack_offsets[p0 : p1 + 1])
            pack_of_item = np.repeat(np.arange(p1 - p0), seq_counts)
            pack_tokens = np.bincount(pack_of_item, weights=lens, minlength=p1 - p0).astype(np.int64)
            row_token_offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(pack_tokens)])
            out_ids = np.empty(int(row_token_offsets[-1]), dtype=np.int64)
            out_mask = np.empty(len(out_ids), dtype=np.int8)
            out_starts = np.empty(hi - lo, dtype=np.int64)
            _gather_kernel(
                tokens,
                mask,
                offsets,
                items,
                lo,
                hi,
                out_ids,
                out_mask,
                out_starts,
                pack_of_item,
                row_token_offsets,
            )
            seq_offsets = (pack_offsets[p0 : p1 + 1] - lo).astype(np.int32)
            batch = pa.record_batch(
                [
                    pa.ListArray.from_arrays(pa.array(row_token_offsets.astype(np.int32)), pa.array(out_ids)),
                    pa.ListArray.from_arrays(
                        pa.array(row_token_offsets.astype(np.int32)), pa.array(out_mask)
                    ),
                    pa.ListArray.from_arrays(pa.array(seq_offsets), pa.array(out_starts)),
                ],
                schema=PACKED_SCHEMA,
            )
            writer.write_batch(batch, row_group_size=ROW_GROUP_SIZE)
            if on_row_group is not None:
                on_row_group(p1 - p0, len(out_ids))
