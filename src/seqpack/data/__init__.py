"""Samples in, packs out: readers, tokenization, loss masks, pre-padding, writers, packed-data readers."""

from seqpack.data._example_data import EXAMPLE_EOS_ID, example_dataset_path
from seqpack.data._legacy_npy import read_legacy_npy
from seqpack.data._options import InputOptions, LengthPolicy, PackOptions, PackSize, RunSettings
from seqpack.data._pipeline import PackResult, bridge_overrides, pack_files
from seqpack.data._shape import TooLong
from seqpack.data._write import PACKED_SCHEMA, ROW_GROUP_SIZE
from seqpack.data.metadata import (
    BRIDGE_METADATA_KEYS,
    SEQPACK_KEY,
    MetadataEntry,
    PackingMetadata,
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
    resolve_packed_paths,
    validate_block,
)
from seqpack.data.packed_scan import collect_stats
from seqpack.data.packed_stats import PackedStats, compare_metadata

__all__ = [
    "BRIDGE_METADATA_KEYS",
    "EXAMPLE_EOS_ID",
    "PACKED_SCHEMA",
    "REQUIRED_COLUMNS",
    "ROW_GROUP_SIZE",
    "SEQPACK_KEY",
    "InputOptions",
    "LengthPolicy",
    "MetadataEntry",
    "PackOptions",
    "PackResult",
    "PackSize",
    "PackedBlock",
    "PackedReader",
    "PackedRow",
    "PackedStats",
    "PackingMetadata",
    "RunSettings",
    "TooLong",
    "bridge_overrides",
    "collect_stats",
    "combine_metadata",
    "compare_metadata",
    "example_dataset_path",
    "metadata_filename",
    "pack_files",
    "packed_filename",
    "read_legacy_npy",
    "read_metadata",
    "resolve_packed_paths",
    "validate_block",
    "write_metadata_entry",
]
