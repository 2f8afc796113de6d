"""Imbalance under Bridge's sampler: loads dealt by hand from the same permutation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.errors import UsageError
from bridgepack.sizing import rank_loads, step_imbalance

torch = pytest.importorskip("torch")


def hand_dealt(costs: np.ndarray, dp: int, gbs: int, seed: int, epoch: int) -> list[list[float]]:
    generator = torch.Generator()
    generator.manual_seed(seed + epoch)
    order = torch.randperm(len(costs), generator=generator).tolist()
    steps = []
    for start in range(0, len(order) - gbs + 1, gbs):
        batch = order[start : start + gbs]
        steps.append([sum(costs[i] for i in batch[r::dp]) for r in range(dp)])
    return steps


@pytest.mark.parametrize(("dp", "gbs", "epoch"), [(2, 4, 0), (3, 6, 1), (4, 4, 2)])
def test_rank_loads_match_hand_dealing(dp: int, gbs: int, epoch: int) -> None:
    costs = np.arange(1, 24, dtype=np.float64) ** 2  # 23 packs: the last partial batch drops
    loads = rank_loads(costs, dp, gbs, seed=7, epoch=epoch)
    assert loads.tolist() == hand_dealt(costs, dp, gbs, 7, epoch)


def test_step_imbalance_summary() -> None:
    costs = np.array([1.0, 3.0, 1.0, 3.0, 2.0, 2.0, 2.0, 2.0])
    result = step_imbalance(costs, 2, 4, seed=0, epochs=2)
    ratios = [max(s) / (sum(s) / 2) for e in range(2) for s in hand_dealt(costs, 2, 4, 0, e)]
    assert result.steps == 4
    assert result.mean == pytest.approx(np.mean(ratios))
    assert result.worst == pytest.approx(max(ratios))
    assert result.step_time_saving == pytest.approx(1 - 1 / np.mean(ratios))


def test_equal_costs_are_balanced() -> None:
    assert step_imbalance(np.full(64, 5.0), 8, 16).mean == 1.0


def test_bad_batch() -> None:
    with pytest.raises(UsageError, match="DP 3 does not divide the global batch size 8"):
        step_imbalance(np.ones(16), 3, 8)
    with pytest.raises(UsageError, match="make no full global batch"):
        step_imbalance(np.ones(4), 2, 8)


@given(st.integers(1, 200), st.sampled_from([(1, 1), (2, 4), (4, 8), (3, 6), (8, 16)]), st.integers(0, 3))
def test_rank_loads_match_bridgepack_sampler_per_rank(total: int, batch: tuple[int, int], epoch: int) -> None:
    from bridgepack.batching import GlobalBatchSampler

    dp, gbs = batch
    if total < gbs:
        return
    costs = np.arange(total, dtype=np.float64) + 1.0
    loads = rank_loads(costs, dp, gbs, seed=11, epoch=epoch)
    for rank in range(dp):
        sampler = GlobalBatchSampler(
            total, gbs, rank, dp, seed=11, consumed_samples=epoch * (total // gbs * gbs)
        )
        assert [costs[b].sum() for b in sampler] == loads[:, rank].tolist()


def test_row_costs_equal_pack_costs() -> None:
    from bridgepack.packing import CostModel, pack_costs, pack_lengths
    from bridgepack.sizing import row_costs

    model = CostModel(dense=3.0, attention=0.5)
    plan = pack_lengths([4, 2, 6, 3, 2, 5], 10, algorithm="first_fit_shuffle", seed=0)
    dense, attention = pack_costs(plan, model)
    rows = row_costs(plan.lengths[plan.items], plan.sequences_per_pack, model)
    np.testing.assert_allclose(rows, dense + attention)
