"""Planning from lengths: pack-size candidates and the DP imbalance of their packs under Bridge's sampler.

The cost model and balanced packing are packing algorithms (:mod:`seqpack.packing`); they are re-exported
here because the planner's users reach for them together.
"""

from seqpack.data.lengths import read_lengths
from seqpack.packing import (
    DEFAULT_DIMS,
    EFFICIENCY_TOLERANCE,
    CostModel,
    ModelDims,
    balanced_pack,
    cost_spread,
    pack_costs,
    resolve_cost_model,
)
from seqpack.plan._candidates import (
    DEFAULT_PACK_SIZES,
    DEFAULT_TOKEN_SLOTS,
    Candidate,
    Topology,
    balance_worthwhile,
    bridge_overrides,
    evaluate,
    evaluate_candidate,
    pack_command,
    parse_pack_sizes,
    recommend,
)
from seqpack.plan._imbalance import (
    DEFAULT_SAMPLER_SEED,
    Imbalance,
    SamplerSimulation,
    check_batch,
    rank_loads,
    row_costs,
    step_imbalance,
)

__all__ = [
    "DEFAULT_DIMS",
    "DEFAULT_PACK_SIZES",
    "DEFAULT_SAMPLER_SEED",
    "DEFAULT_TOKEN_SLOTS",
    "EFFICIENCY_TOLERANCE",
    "Candidate",
    "CostModel",
    "Imbalance",
    "ModelDims",
    "SamplerSimulation",
    "Topology",
    "balance_worthwhile",
    "balanced_pack",
    "bridge_overrides",
    "check_batch",
    "cost_spread",
    "evaluate",
    "evaluate_candidate",
    "pack_command",
    "pack_costs",
    "parse_pack_sizes",
    "rank_loads",
    "read_lengths",
    "recommend",
    "resolve_cost_model",
    "row_costs",
    "step_imbalance",
]
