"""Bin packing on integer length arrays: lengths in, a :class:`PackPlan` (CSR of item indices) out.

>>> from seqpack.packing import pack_lengths
>>> plan = pack_lengths([4, 2, 6, 3, 2, 5], 10, algorithm="first_fit_shuffle", seed=0)
>>> plan.to_lists(), plan.pack_sums.tolist()
([[2, 3], [4, 0, 1], [5]], [9, 8, 5])
"""

from seqpack.packing._assign import (
    ALGORITHMS,
    BRIDGE_ALGORITHMS,
    BRIDGE_DEFAULT_ALGORITHM,
    BRIDGE_DEFAULT_SEED,
    DEFAULT_ALGORITHM,
    pack_lengths,
)
from seqpack.packing._plan import BRIDGE_METADATA_KEYS, PackPlan

__all__ = [
    "ALGORITHMS",
    "BRIDGE_ALGORITHMS",
    "BRIDGE_DEFAULT_ALGORITHM",
    "BRIDGE_DEFAULT_SEED",
    "BRIDGE_METADATA_KEYS",
    "DEFAULT_ALGORITHM",
    "PackPlan",
    "pack_lengths",
]
