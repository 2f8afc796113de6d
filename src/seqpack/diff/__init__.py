"""Comparison of two packings or two batch dumps: what changed, by content (``seqpack diff``).

Fingerprints moved to :mod:`seqpack.fingerprint` (file level: :mod:`seqpack.data.packed_source`), the stack
report to :mod:`seqpack.env`, the cross-checks against Bridge to :mod:`seqpack.verify`, batch dumps to
:mod:`seqpack.batching`. Their old names here still resolve for one release, with a DeprecationWarning.
"""

import importlib
import warnings
from typing import Any

from seqpack.diff._compare import diff_paths
from seqpack.diff._packed_diff import recorded_entry_fingerprint, recorded_fingerprint

__all__ = ["diff_paths", "recorded_entry_fingerprint", "recorded_fingerprint"]

#: Names that lived here before 0.2, and the module each lives in now.
_MOVED = {
    **dict.fromkeys(
        (
            "FINGERPRINT_ALGORITHM",
            "MASK_KINDS",
            "BlockHashes",
            "Fingerprint",
            "PackedFingerprinter",
            "hash_block",
        ),
        "seqpack.fingerprint",
    ),
    **dict.fromkeys(("PackedSource", "fingerprint_packed"), "seqpack.data.packed_source"),
    **dict.fromkeys(
        (
            "EnvReport",
            "VersionTable",
            "collect_versions",
            "env_findings",
            "env_report",
            "parse_version",
        ),
        "seqpack.env",
    ),
    **dict.fromkeys(("PartResult", "VerifyOptions", "verify_bridge"), "seqpack.verify"),
    "dump_batches": "seqpack.batching",
}


def __getattr__(name: str) -> Any:
    """The deprecated aliases: resolved on first use (the new modules are not loaded by ``seqpack diff``)."""
    if name not in _MOVED:
        raise AttributeError(f"module 'seqpack.diff' has no attribute {name!r}")
    warnings.warn(
        f"seqpack.diff.{name} moved to {_MOVED[name]}.{name}; the old name goes away in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(_MOVED[name]), name)
