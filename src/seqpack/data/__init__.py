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

__all__ = [
    "BRIDGE_METADATA_KEYS",
    "SEQPACK_KEY",
    "combine_metadata",
    "metadata_filename",
    "packed_filename",
    "read_metadata",
    "write_metadata_entry",
]
