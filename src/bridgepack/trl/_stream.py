"""``pack_dataset`` on a stream (``IterableDataset``): TRL's per-batch packing, on bridgepack's planner.

A stream gives no length before its rows arrive, so no global plan exists: as TRL does, each ``map`` batch
(``batch_size`` rows, 1,000 by default) is planned and packed on its own, lazily, as the stream is read.
Each batch is packed with the same code as a whole ``Dataset`` (lengths from the Arrow offsets, the numba
planner, one copy of the token runs), so the packs of a batch are what ``pack_dataset`` gives for a
``Dataset`` of that batch's rows.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from bridgepack.trl._columns import empty_batch, packed_batches, read_sources
from bridgepack.trl._fragments import plan_fragments


def pack_stream(dataset: Any, seq_length: int, strategy: str, map_kwargs: dict[str, Any] | None) -> Any:
    """Pack an ``IterableDataset`` batch by batch (``map_kwargs`` go to its ``map``, as TRL passes them);
    the result keeps the input's format, as TRL's does."""
    form = dataset._formatting.format_type if dataset._formatting is not None else None

    def pack_batch(table: pa.Table) -> pa.Table:
        return pack_table(table, seq_length, strategy)

    packed = dataset.with_format("arrow").map(pack_batch, batched=True, **(map_kwargs or {}))
    return packed.with_format(form)


def pack_table(table: pa.Table, seq_length: int, strategy: str) -> pa.Table:
    """The rows of ``table`` packed into rows of at most ``seq_length`` tokens (one plan for all)."""
    sources, row_lengths = read_sources(table)
    fragments = plan_fragments(row_lengths, seq_length, strategy)
    packed = packed_batches(sources, fragments, None, max(1, fragments.num_packs), strategy != "wrapped")
    batches = [packed.build(batch) for batch in range(len(packed))]
    if batches:
        return pa.Table.from_batches(batches)
    return pa.Table.from_batches([empty_batch(table, strategy, sources)])
