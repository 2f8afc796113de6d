"""Bin packing on integer length arrays: lengths in, a :class:`PackPlan` (CSR of item indices) out.

Every algorithm is in one table (``_algorithms``): Bridge's ``first_fit_shuffle`` and ``first_fit_decreasing``
(item for item as Bridge 0.6.2), bridgepack's ``best_fit_decreasing`` and ``balanced`` (the default of
``bridgepack pack``: as few packs, even costs under a :class:`CostModel`).

>>> from bridgepack.packing import pack_lengths
>>> plan = pack_lengths([4, 2, 6, 3, 2, 5], 10, algorithm="first_fit_shuffle", seed=0)
>>> plan.to_lists(), plan.pack_sums.tolist()
([[2, 3], [4, 0, 1], [5]], [9, 8, 5])
"""

from bridgepack.packing._algorithms import (
    ALGORITHMS,
    BALANCED,
    BEST_FIT_DECREASING,
    BRIDGE_ALGORITHMS,
    BRIDGE_DEFAULT_ALGORITHM,
    BRIDGE_DEFAULT_SEED,
    DEFAULT_ALGORITHM,
    FIRST_FIT_DECREASING,
    FIRST_FIT_SHUFFLE,
)
from bridgepack.packing._assign import balanced_pack, pack_lengths
from bridgepack.packing._balance import EFFICIENCY_TOLERANCE, cost_spread, efficiency
from bridgepack.packing._cost import (
    DEFAULT_DIMS,
    CostModel,
    ModelDims,
    pack_costs,
    resolve_cost_model,
    squared_sums,
)
from bridgepack.packing._pad import MAX_PAD_MULTIPLE, checked_multiple, pad_multiple
from bridgepack.packing._plan import (
    BRIDGE_METADATA_KEYS,
    PackPlan,
    bridge_metadata_values,
    packing_efficiency,
)

__all__ = [
    "ALGORITHMS",
    "BALANCED",
    "BEST_FIT_DECREASING",
    "BRIDGE_ALGORITHMS",
    "BRIDGE_DEFAULT_ALGORITHM",
    "BRIDGE_DEFAULT_SEED",
    "BRIDGE_METADATA_KEYS",
    "DEFAULT_ALGORITHM",
    "DEFAULT_DIMS",
    "EFFICIENCY_TOLERANCE",
    "FIRST_FIT_DECREASING",
    "FIRST_FIT_SHUFFLE",
    "MAX_PAD_MULTIPLE",
    "CostModel",
    "ModelDims",
    "PackPlan",
    "balanced_pack",
    "bridge_metadata_values",
    "checked_multiple",
    "cost_spread",
    "efficiency",
    "pack_costs",
    "pack_lengths",
    "packing_efficiency",
    "pad_multiple",
    "resolve_cost_model",
    "squared_sums",
]
