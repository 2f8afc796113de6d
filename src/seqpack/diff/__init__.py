"""Comparison of two packings or two batch dumps: what changed, by content (``seqpack diff``)."""

from seqpack.diff._compare import DiffReport, diff_paths
from seqpack.diff._packed_diff import diff_packed, recorded_entry_fingerprint, unlike_record_error

__all__ = ["DiffReport", "diff_packed", "diff_paths", "recorded_entry_fingerprint", "unlike_record_error"]
