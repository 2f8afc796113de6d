"""Planning from lengths: the step-cost model, pack-size candidates, balanced packs, sampler imbalance."""

from seqpack.data.lengths import read_lengths
from seqpack.plan._balance import BALANCED_ALGORITHM, EFFICIENCY_TOLERANCE, balanced_pack, cost_spread
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
from seqpack.plan._cost import DEFAULT_DIMS, CostModel, ModelDims, pack_costs, resolve_cost_model
from seqpack.plan._imbalance import (
    DEFAULT_SAMPLER_SEED,
    Imbalance,
    check_batch,
    rank_loads,
    row_costs,
    step_imbalance,
)

__all__ = [
    "BALANCED_ALGORITHM",
    "DEFAULT_DIMS",
    "DEFAULT_PACK_SIZES",
    "DEFAULT_SAMPLER_SEED",
    "DEFAULT_TOKEN_SLOTS",
    "EFFICIENCY_TOLERANCE",
    "Candidate",
    "CostModel",
    "Imbalance",
    "ModelDims",
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
