"""Reading packed data: Bridge's packed Parquet and the legacy ``.npy``, one open source over either,
the one-pass scan and statistics, ``inspect``'s checked pass, and decoding sequences back to text.
"""

from bridgepack.data.packed._decode import Decoded, Piece, decode_pieces
from bridgepack.data.packed._inspection import CONSISTENT, MISMATCH, EosCheck, Inspection, inspect_packed
from bridgepack.data.packed._legacy_npy import read_legacy_npy
from bridgepack.data.packed._reader import (
    PackedBlock,
    PackedReader,
    PackedRow,
    resolve_packed_paths,
    validate_block,
)
from bridgepack.data.packed._recorded import (
    CHECKED,
    FingerprintReport,
    RecordedCheck,
    files_recorded_fingerprint,
    mismatch,
    not_as_recorded,
)
from bridgepack.data.packed._scan import PackedScan, collect_stats
from bridgepack.data.packed._source import (
    PackedSource,
    fingerprint_packed,
    infer_eos_id,
    scan_blocks,
)
from bridgepack.data.packed._stats import MetadataMismatch, PackedStats, check_pack_capacity, compare_metadata
from bridgepack.data.packed._supervised import PackedSequence, first_sequences

__all__ = [
    "CHECKED",
    "CONSISTENT",
    "MISMATCH",
    "Decoded",
    "EosCheck",
    "FingerprintReport",
    "Inspection",
    "MetadataMismatch",
    "PackedBlock",
    "PackedReader",
    "PackedRow",
    "PackedScan",
    "PackedSequence",
    "PackedSource",
    "PackedStats",
    "Piece",
    "RecordedCheck",
    "check_pack_capacity",
    "collect_stats",
    "compare_metadata",
    "decode_pieces",
    "files_recorded_fingerprint",
    "fingerprint_packed",
    "first_sequences",
    "infer_eos_id",
    "inspect_packed",
    "mismatch",
    "not_as_recorded",
    "read_legacy_npy",
    "resolve_packed_paths",
    "scan_blocks",
    "validate_block",
]
