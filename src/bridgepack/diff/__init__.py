"""Comparison of two packings or two batch dumps: what changed, by content (``bridgepack diff``)."""

from bridgepack.diff._compare import DiffReport, diff_paths
from bridgepack.diff._packed_diff import diff_packed, recorded_entry_fingerprint, unlike_record_error

__all__ = ["DiffReport", "diff_packed", "diff_paths", "recorded_entry_fingerprint", "unlike_record_error"]
