"""Content fingerprints of packed data (a leaf: numpy and numba only).

``content`` hashes the multiset of sequences with their loss masks (same data?), ``packs`` the packs as
stored (same packing?). The pack writer computes them row group by row group as it writes; the file-level
entry point, :func:`bridgepack.data.packed.fingerprint_packed`, streams a packed set through them.
"""

from bridgepack.fingerprint._fingerprint import (
    CHECKABLE_ALGORITHMS,
    FINGERPRINT_ALGORITHM,
    BlockHashes,
    CsrPacks,
    Fingerprint,
    PackedFingerprinter,
    PackTable,
    SequenceTable,
    hash_and_check_block,
    hash_block,
)
from bridgepack.fingerprint._hash import MASK_KINDS

__all__ = [
    "CHECKABLE_ALGORITHMS",
    "FINGERPRINT_ALGORITHM",
    "MASK_KINDS",
    "BlockHashes",
    "CsrPacks",
    "Fingerprint",
    "PackTable",
    "PackedFingerprinter",
    "SequenceTable",
    "hash_and_check_block",
    "hash_block",
]
