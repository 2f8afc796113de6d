"""Regression tools: content fingerprints, packed-data and batch comparison, the environment report."""

from typing import Any

from seqpack.diff._compare import diff_paths
from seqpack.diff._dump import dump_batches
from seqpack.diff._env import (
    EnvFinding,
    EnvReport,
    VersionTable,
    collect_versions,
    env_findings,
    env_report,
    parse_version,
)
from seqpack.diff._fingerprint import (
    FINGERPRINT_ALGORITHM,
    BlockHashes,
    Fingerprint,
    PackedFingerprinter,
    PackedSource,
    fingerprint_packed,
    hash_block,
)
from seqpack.diff._hash import MASK_KINDS
from seqpack.diff._packed_diff import recorded_fingerprint

__all__ = [
    "FINGERPRINT_ALGORITHM",
    "MASK_KINDS",
    "BlockHashes",
    "EnvFinding",
    "EnvReport",
    "Fingerprint",
    "PackedFingerprinter",
    "PackedSource",
    "PartResult",
    "VerifyOptions",
    "VersionTable",
    "collect_versions",
    "diff_paths",
    "dump_batches",
    "env_findings",
    "env_report",
    "fingerprint_packed",
    "hash_block",
    "parse_version",
    "recorded_fingerprint",
    "verify_bridge",
]


#: Loaded on first use: verification pulls in doctor's rule table, which ``seqpack pack`` (a user of this
#: package's fingerprints) does not need at start-up.
_VERIFY_NAMES = ("PartResult", "VerifyOptions", "verify_bridge")


def __getattr__(name: str) -> Any:
    if name in _VERIFY_NAMES:
        from seqpack.diff import _verify

        return getattr(_verify, name)
    raise AttributeError(f"module 'seqpack.diff' has no attribute {name!r}")
