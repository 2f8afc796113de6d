"""The columns of a pack set: Bridge's packed Parquet and the Hugging Face padding-free layout.

Writers (``bridgepack.data.pipeline``) and readers (``bridgepack.data.packed``) both follow these, so the one
schema lives below both (docs/bridge-format.md §3).
"""

from __future__ import annotations

import enum

import pyarrow as pa


class Layout(enum.Enum):
    """How a pack set's rows are laid out on disk (``bridgepack pack --layout``)."""

    #: Bridge's packed Parquet: ``input_ids``, ``loss_mask``, ``seq_start_id`` (bridge-format §3).
    bridge = "bridge"
    #: The Hugging Face padding-free layout: ``input_ids``, ``position_ids``, ``labels``, ``seq_lengths``.
    #: Its value ``hf`` (the layout's name before 0.3) is what a pack's metadata records and JSON shows, so
    #: sets written before stay readable; ``--layout`` takes ``padding-free`` and ``hf`` alike.
    padding_free = "hf"

    @property
    def shown(self) -> str:
        """How ``--layout`` and errors spell the layout: ``bridge``, ``padding-free (or hf)``."""
        name = self.name.replace("_", "-")
        return name if name == self.value else f"{name} (or {self.value})"

    @classmethod
    def _missing_(cls, value: object) -> Layout | None:
        """``Layout("padding-free")``: a layout by its name as well as by its recorded value."""
        return next((layout for layout in cls if layout.name.replace("_", "-") == value), None)


#: Bridge's packed Parquet schema, column order and types (bridge-format §3).
PACKED_SCHEMA = pa.schema(
    [
        ("input_ids", pa.list_(pa.int64())),
        ("loss_mask", pa.list_(pa.int8())),
        ("seq_start_id", pa.list_(pa.int64())),
    ]
)
#: The Hugging Face padding-free layout (``--layout padding-free``): what ``DataCollatorWithFlattening``-style
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
#: Legacy packed files (Bridge <= v0.5) end in ``.npy``; everything else goes to the Parquet reader.
LEGACY_SUFFIX = ".npy"
