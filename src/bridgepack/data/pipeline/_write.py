"""Pass 2: read each row group's packs from the scratch store and stream Parquet (bridge-format §3).

For every row group of 500 packs the examples are read from the scratch store in the plan's order, so
the buffer already *is* the concatenation of the packs; then each example's mask is rolled left by one
(the last position of every example becomes 0) and the start of every example is recorded. Pack of
examples ``[5 6 2]`` (mask ``[0 1 1]``) and ``[7 2]`` (mask ``[1 1]``)::

    input_ids    [5 6 2 7 2]
    loss_mask    [1 1 0 1 0]      stored mask[j] = "label j (token j+1) is a target"
    seq_start_id [0 3]

The roll over the whole buffer is ``rolled[j] = mask[j + 1]`` followed by a 0 at every example's last
position, which is exact because those are the only positions where ``j + 1`` crosses into the next
example. The buffers are wrapped zero-copy as Arrow list arrays and encoded as one row group each.

Row groups are independent, so each one is read, built, fingerprinted and encoded on a thread of its own
(``threads``), and :class:`~bridgepack.data.pipeline._row_groups.RowGroupStitcher` writes them to the file in
order: the file is byte for byte what one thread would write. Memory is bounded by the ``2 * threads`` row
groups in flight, whatever the dataset size.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from bridgepack._arrow import list_array
from bridgepack._ordered import map_ordered
from bridgepack.data.packset import (
    COMPRESSION,
    HF_SCHEMA,
    IGNORE_INDEX,
    PACKED_SCHEMA,
    ROW_GROUP_SIZE,
    Layout,
)
from bridgepack.data.pipeline._row_groups import RowGroupStitcher, encode_row_group
from bridgepack.fingerprint import BlockHashes, PackedFingerprinter, hash_block

#: ``read(items) -> (tokens, mask, lengths)`` of the examples ``items``, in that order.
Reader = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class _EncodedGroup:
    """One row group, ready to append: its Parquet bytes, size, and (Bridge layout) its hashes."""

    packs: int
    tokens: int
    parquet: pa.Buffer
    hashes: BlockHashes | None


def write_packed(
    path: Path,
    read: Reader,
    items: np.ndarray,
    pack_offsets: np.ndarray,
    on_row_group: Callable[[int, int], None] | None = None,
    layout: Layout = Layout.bridge,
    fingerprinter: PackedFingerprinter | None = None,
    threads: int = 1,
    key_value: dict[bytes, bytes] | None = None,
) -> None:
    """Write packs ``pack_offsets`` over ``items`` (indices of examples in the store) to ``path``.

    ``read`` must be safe to call from ``threads`` threads at once. ``fingerprinter`` sees every row
    group's buffers as written (bridgepack's content/packs fingerprints; Bridge layout only). ``key_value``
    goes into the file's Parquet key/value metadata (the run id, :mod:`bridgepack.data.packset._runs`).
    """
    num_packs = len(pack_offsets) - 1
    schema = HF_SCHEMA if layout is Layout.padding_free else PACKED_SCHEMA
    if key_value:
        schema = schema.with_metadata(key_value)
    eos_id = None if fingerprinter is None else fingerprinter.eos_id

    def encode(p0: int) -> _EncodedGroup:
        p1 = min(p0 + ROW_GROUP_SIZE, num_packs)
        batch, hashes = _row_group(read, items, pack_offsets, p0, p1, layout, schema, eos_id)
        tokens = int(batch.column(0).offsets[-1].as_py())
        return _EncodedGroup(p1 - p0, tokens, encode_row_group(batch, COMPRESSION), hashes)

    threads = max(1, threads)
    with open(path, "wb") as handle, ThreadPoolExecutor(threads, "bridgepack-encode") as pool:
        sink = RowGroupStitcher(handle, schema, COMPRESSION)
        for group in map_ordered(pool, encode, range(0, num_packs, ROW_GROUP_SIZE), 2 * threads):
            sink.append(group.parquet)
            if fingerprinter is not None and group.hashes is not None:
                fingerprinter.add(group.hashes)
            if on_row_group is not None:
                on_row_group(group.packs, group.tokens)
        sink.finish()


def _row_group(
    read: Reader,
    items: np.ndarray,
    pack_offsets: np.ndarray,
    p0: int,
    p1: int,
    layout: Layout,
    schema: pa.Schema,
    eos_id: int | None,
) -> tuple[pa.RecordBatch, BlockHashes | None]:
    """Packs ``p0 .. p1-1`` as one Arrow record batch of ``schema``, hashed when ``eos_id`` is given."""
    lo, hi = int(pack_offsets[p0]), int(pack_offsets[p1])
    tokens, mask, lens = read(items[lo:hi])
    ids = tokens.astype(np.int64)
    seq_ends = np.cumsum(lens)
    seq_starts = seq_ends - lens
    seq_offsets = pack_offsets[p0 : p1 + 1] - lo  # sequences per row
    row_offsets = np.concatenate([np.zeros(1, np.int64), seq_ends])[seq_offsets]  # tokens per row
    hashes = None
    if layout is Layout.padding_free:
        positions = np.arange(len(ids), dtype=np.int64) - np.repeat(seq_starts, lens)
        labels = np.where((positions == 0) | (mask == 0), IGNORE_INDEX, ids)
        columns = [
            list_array(row_offsets, ids),
            list_array(row_offsets, positions),
            list_array(row_offsets, labels),
            list_array(seq_offsets, lens.astype(np.int64)),
        ]
    else:
        rolled = np.empty(len(mask), dtype=np.int8)
        rolled[:-1] = mask[1:]
        rolled[seq_ends - 1] = 0
        pack_of_seq = np.repeat(np.arange(p1 - p0), np.diff(seq_offsets))
        starts_in_row = seq_starts - row_offsets[pack_of_seq]
        columns = [
            list_array(row_offsets, ids),
            list_array(row_offsets, rolled),
            list_array(seq_offsets, starts_in_row),
        ]
        if eos_id is not None:
            hashes = hash_block(row_offsets, ids, row_offsets, rolled, seq_offsets, starts_in_row, eos_id)
    return pa.record_batch(columns, schema=schema), hashes
