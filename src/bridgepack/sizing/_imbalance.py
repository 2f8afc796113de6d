"""Per-step load imbalance across data-parallel ranks under Bridge's batch sampler (bridge-format §5).

Every step, each DP rank processes the GBS/DP packs the sampler deals it and the step lasts as long as
the slowest rank. With ``c`` the cost of each pack, the step's imbalance is::

    imbalance(step) = max over ranks of sum(c of the rank's packs) / mean over ranks of the same sums

1.0 is perfect balance; 1.10 means the slowest rank works 10% longer than the average one, i.e. the
step could be ``1 - 1/1.10 = 9.1%`` shorter if the work were even (the *implied step-time saving*).
The rows each rank gets come from :class:`bridgepack.batching.GlobalBatchSampler` (Bridge's sampler,
index for index): GBS 4, DP 2, epoch order ``[5 0 3 1 | 4 2 ...]`` -> step 0: rank 0 packs 5, 3 and
rank 1 packs 0, 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from bridgepack.batching import GlobalBatchSampler
from bridgepack.data.packed import PackedBlock
from bridgepack.errors import UsageError
from bridgepack.packing import CostModel

FloatArray = npt.NDArray[np.float64]
#: Seed of the simulated sampler when none is given (the same default as ``GlobalBatchSampler``).
DEFAULT_SAMPLER_SEED = 1234


def check_batch(gbs: int, dp: int) -> None:
    """Spec §8: GBS must be a positive multiple of MBS x DP (offline packing: MBS 1), and >= DP."""
    if dp < 1 or gbs < 1:
        raise UsageError(f"GBS and DP must be positive, got GBS {gbs}, DP {dp}")
    if gbs % dp:
        raise UsageError(
            f"DP {dp} does not divide the global batch size {gbs} (with MBS 1 each rank needs GBS/DP packs)"
        )


def rank_loads(costs: npt.ArrayLike, dp: int, gbs: int, seed: int, epoch: int) -> FloatArray:
    """``[steps, dp]``: summed pack cost of each rank on each full step of ``epoch``."""
    values = np.asarray(costs, dtype=np.float64)
    check_batch(gbs, dp)
    sampler = GlobalBatchSampler(values.shape[0], gbs, 0, dp, seed=seed)
    order = sampler.epoch_order(epoch)
    steps = order.shape[0] // gbs  # drop_last: Bridge's SFT default drops the last incomplete batch
    # batch b, position i -> rank i % dp (interleaved dealing): [steps, gbs/dp, dp] summed over axis 1
    dealt = values[order[: steps * gbs]].reshape(steps, gbs // dp, dp)
    loads: FloatArray = dealt.sum(axis=1)
    return loads


@dataclass(frozen=True)
class Imbalance:
    """Summary of per-step imbalance over the simulated epochs."""

    steps: int
    mean: float  # mean over steps of max/mean across ranks
    p95: float
    worst: float

    @property
    def step_time_saving(self) -> float:
        """``1 - 1/mean``: the share of step time spent waiting for the slowest rank."""
        return 1.0 - 1.0 / self.mean if self.mean > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "mean": self.mean,
            "p95": self.p95,
            "worst": self.worst,
            "step_time_saving": self.step_time_saving,
        }


def step_imbalance(
    costs: npt.ArrayLike, dp: int, gbs: int, seed: int = DEFAULT_SAMPLER_SEED, epochs: int = 1
) -> Imbalance:
    """Simulate ``epochs`` epochs of Bridge's sampler over packs of the given costs."""
    values = np.asarray(costs, dtype=np.float64)
    if values.shape[0] < gbs:
        raise UsageError(f"{values.shape[0]} packs make no full global batch of {gbs}")
    ratios = []
    for epoch in range(epochs):
        loads = rank_loads(values, dp, gbs, seed, epoch)
        mean = loads.mean(axis=1)
        ratios.append(np.divide(loads.max(axis=1), mean, out=np.ones_like(mean), where=mean > 0))
    per_step = np.concatenate(ratios)
    return Imbalance(
        steps=int(per_step.shape[0]),
        mean=float(per_step.mean()),
        p95=float(np.percentile(per_step, 95)),
        worst=float(per_step.max()),
    )


def row_costs(
    sequence_lengths: npt.ArrayLike, sequences_per_row: npt.ArrayLike, model: CostModel
) -> FloatArray:
    """Cost of each packed row from its sequences' runtime lengths, flat in row order (rows non-empty)."""
    lengths = np.asarray(sequence_lengths, dtype=np.float64)
    counts = np.asarray(sequences_per_row, dtype=np.int64)
    if counts.size == 0:
        return np.zeros(0, dtype=np.float64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    costs: FloatArray = np.add.reduceat(model.dense * lengths + model.attention * lengths * lengths, starts)
    return costs


@dataclass
class SamplerSimulation:
    """Bridge's sampler dealt over ``dp`` ranks, ``gbs`` packs a step, fed packed blocks in stored order
    (``bridgepack inspect --dp --gbs``): the pack costs are taken during the inspection's own pass."""

    dp: int
    gbs: int
    model: CostModel
    _costs: list[FloatArray] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_batch(self.gbs, self.dp)

    def add(self, block: PackedBlock) -> None:
        """Take the costs of ``block``'s packs (runtime length = stored - 1 per sequence)."""
        self._costs.append(row_costs(block.sequence_lengths() - 1, block.sequences_per_row(), self.model))

    def result(self) -> dict[str, Any]:
        """The simulated imbalance of one epoch, with the settings it was simulated under."""
        costs = np.concatenate(self._costs) if self._costs else np.zeros(0, dtype=np.float64)
        imbalance = step_imbalance(costs, self.dp, self.gbs)
        return {
            "dp": self.dp,
            "gbs": self.gbs,
            "sampler_seed": DEFAULT_SAMPLER_SEED,
            **imbalance.to_dict(),
            "cost_model": self.model.to_record(),
        }
