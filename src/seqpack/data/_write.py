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
from typing import TYPE_CHECKING

import numba
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from seqpack.diff._fingerprint import PackedFingerprinter

#: Bridge's packed Parquet schema, column order and types (spec §3).
PACKED_SCHEMA = pa.schema(
    [
        ("input_ids", pa.list_(pa.int64())),
        ("loss_mask", pa.list_(pa.int8())),
        ("seq_start_id", pa.list_(pa.int64())),
    ]
)
#: The Hugging Face padding-free layout (``--layout hf``): what ``DataCollatorWithFlattening``-style
#: training reads. ``labels`` is -100 on every sequence's first token and wherever the mask is 0.
HF_SCHEMA = pa.schema(
    [
        ("input_ids", pa.list_(pa.int64())),
        ("position_ids", pa.list_(pa.int64())),
        ("labels", pa.list_(pa.int64())),
        ("seq_lengths", pa.list_(pa.int64())),
    ]
)
#: The label Hugging Face losses ignore.
IGNORE_INDEX = -100
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


@numba.njit(cache=True)
def _gather_hf_kernel(
    tokens: np.ndarray,
    mask: np.ndarray,
    offsets: np.ndarray,
    items: np.ndarray,
    item_lo: int,
    item_hi: int,
    out_ids: np.ndarray,
    out_pos: np.ndarray,
    out_labels: np.ndarray,
    out_lens: np.ndarray,
) -> None:
    o = 0
    for t in range(item_lo, item_hi):
        i = items[t]
        a = offsets[i]
        b = offsets[i + 1]
        out_lens[t - item_lo] = b - a
        for j in range(a, b):
            out_ids[o] = tokens[j]
            out_pos[o] = j - a
            out_labels[o] = tokens[j] if (j > a and mask[j] != 0) else IGNORE_INDEX
            o += 1


def write_packed(
    path: Path,
    tokens: np.ndarray,
    mask: np.ndarray,
    offsets: np.ndarray,
    items: np.ndarray,
    pack_offsets: np.ndarray,
    on_row_group: Callable[[int, int], None] | None = None,
    layout: str = "bridge",
    fingerprinter: PackedFingerprinter | None = None,
) -> None:
    """Write packs ``pack_offsets`` over ``items`` (indices of examples in the store) to ``path``.

    ``fingerprinter`` sees every row group's buffers as written (seqpack's content/packs fingerprints; Bridge
    layout only).
    """
    num_packs = len(pack_offsets) - 1
    example_len = np.diff(offsets)
    schema = HF_SCHEMA if layout == "hf" else PACKED_SCHEMA
    with pq.ParquetWriter(path, schema, compression=COMPRESSION) as writer:
        for p0 in range(0, num_packs, ROW_GROUP_SIZE):
            p1 = min(p0 + ROW_GROUP_SIZE, num_packs)
            lo, hi = int(pack_offsets[p0]), int(pack_offsets[p1])
            lens = example_len[items[lo:hi]]
            seq_counts = np.diff(pack_offsets[p0 : p1 + 1])
            pack_of_item = np.repeat(np.arange(p1 - p0), seq_counts)
            pack_tokens = np.bincount(pack_of_item, weights=lens, minlength=p1 - p0).astype(np.int64)
            row_token_offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(pack_tokens)])
            token_offsets = pa.array(row_token_offsets.astype(np.int32))
            seq_offsets = pa.array((pack_offsets[p0 : p1 + 1] - lo).astype(np.int32))
            out_ids = np.empty(int(row_token_offsets[-1]), dtype=np.int64)
            if layout == "hf":
                out_pos = np.empty(len(out_ids), dtype=np.int64)
                out_labels = np.empty(len(out_ids), dtype=np.int64)
                out_lens = np.empty(hi - lo, dtype=np.int64)
                _gather_hf_kernel(
                    tokens, mask, offsets, items, lo, hi, out_ids, out_pos, out_labels, out_lens
                )
                columns = [
                    pa.ListArray.from_arrays(token_offsets, pa.array(out_ids)),
                    pa.ListArray.from_arrays(token_offsets, pa.array(out_pos)),
                    pa.ListArray.from_arrays(token_offsets, pa.array(out_labels)),
                    pa.ListArray.from_arrays(seq_offsets, pa.array(out_lens)),
                ]
            else:
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
                columns = [
                    pa.ListArray.from_arrays(token_offsets, pa.array(out_ids)),
                    pa.ListArray.from_arrays(token_offsets, pa.array(out_mask)),
                    pa.ListArray.from_arrays(seq_offsets, pa.array(out_starts)),
                ]
                if fingerprinter is not None:
                    row_offsets = pack_offsets[p0 : p1 + 1] - lo
                    fingerprinter.update(
                        row_token_offsets, out_ids, row_token_offsets, out_mask, row_offsets, out_starts
                    )
            batch = pa.record_batch(columns, schema=schema)
            writer.write_batch(batch, row_group_size=ROW_GROUP_SIZE)
            if on_row_group is not None:
                on_row_group(p1 - p0, len(out_ids))
