"""Samples in, packs out: readers, tokenization, loss masks, pre-padding, writers, packed-data readers."""

from seqpack.data.metadata import (
    BRIDGE_METADATA_KEYS,
    SEQPACK_KEY,
    combine_metadata,
    metadata_filename,
    packed_filename,
    read_metadata,
    write_metadata_entry,
)
from seqpack.data.packed import (
    REQUIRED_COLUMNS,
    PackedBlock,
    PackedReader,
    PackedRow,
    read_legacy_npy,
    resolve_packed_paths,
    validate_block,
)
from seqpack.data.packed_stats import PackedStats, collect_stats, compare_metadata

__all__ = [
    "BRIDGE_METADATA_KEYS",
    "REQUIRED_COLUMNS",
    "SEQPACK_KEY",
    "PackedBlock",
    "PackedReader",
    "PackedRow",
    "PackedStats",
    "collect_stats",
    "combine_metadata",
    "compare_metadata",
    "metadata_filename",
    "packed_filename",
    "read_legacy_npy",
    "read_metadata",
    "resolve_packed_paths",
    "validate_block",
    "write_metadata_entry",
]
