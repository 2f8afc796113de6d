"""Choosing a pack size from lengths (the library side of ``bridgepack plan``): pack-size candidates and
the DP imbalance of their packs under Bridge's sampler. The plan of packs itself (:class:`PackPlan`), the
cost model and balanced packing are packing algorithms: import them from :mod:`bridgepack.packing`.
"""

from bridgepack.sizing._candidates import (
    DEFAULT_PACK_SIZES,
    DEFAULT_TOKEN_SLOTS,
    Candidate,
    Topology,
    balance_worthwhile,
    evaluate,
    evaluate_candidate,
    overrides_for_candidate,
    pack_command,
    parse_pack_sizes,
    recommend,
)
from bridgepack.sizing._imbalance import (
    DEFAULT_SAMPLER_SEED,
    Imbalance,
    SamplerSimulation,
    check_batch,
    rank_loads,
    row_costs,
    step_imbalance,
)
from bridgepack.sizing._report import PlanReport

__all__ = [
    "DEFAULT_PACK_SIZES",
    "DEFAULT_SAMPLER_SEED",
    "DEFAULT_TOKEN_SLOTS",
    "Candidate",
    "Imbalance",
    "PlanReport",
    "SamplerSimulation",
    "Topology",
    "balance_worthwhile",
    "check_batch",
    "evaluate",
    "evaluate_candidate",
    "overrides_for_candidate",
    "pack_command",
    "parse_pack_sizes",
    "rank_loads",
    "recommend",
    "row_costs",
    "step_imbalance",
]
