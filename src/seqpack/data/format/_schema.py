"""The columns of a pack set: Bridge's packed Parquet and the Hugging Face padding-free layout.

Writers (``seqpack.data.pipeline``) and readers (``seqpack.data.packed``) both follow these, so the one
schema lives below both (docs/bridge-format.md §3).
"""

from __future__ import annotations

import pyarrow as pa

#: Bridge's packed Parquet schema, column order and types (bridge-format §3).
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
#: Rows (packs) per Parquet row group, as Bridge writes them (bridge-format §3).
ROW_GROUP_SIZE = 500
COMPRESSION = "snappy"

#: The three columns every packed Parquet file must hold, in Bridge's order (bridge-format §3).
REQUIRED_COLUMNS: tuple[str, ...] = ("input_ids", "loss_mask", "seq_start_id")
#: File name endings Bridge accepts as Parquet, compared case-insensitively (``data/packing/paths.py``).
PARQUET_SUFFIXES: tuple[str, ...] = (".parquet", ".pq")
