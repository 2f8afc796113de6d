"""Balanced packing: invariants (hypothesis), the docstring's example, and realistic long-tail data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.packing import (
    EFFICIENCY_TOLERANCE,
    CostModel,
    balanced_pack,
    cost_spread,
    efficiency,
    pack_costs,
    pack_lengths,
)
from bridgepack.packing._balance import cheapest_fit

MODEL = CostModel.default()


def long_tail(n: int, pack: int, seed: int) -> np.ndarray:
    """Chat mixture: 70% short turns, 25% long answers, 5% documents up to ``pack // 2``."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=n, p=[0.70, 0.25, 0.05])
    short = rng.lognormal(np.log(300), 0.9, n)
    long = rng.lognormal(np.log(2000), 0.8, n)
    docs = np.exp(rng.uniform(np.log(4096), np.log(pack // 2), n))
    values = np.where(kind == 0, short, np.where(kind == 1, long, docs))
    return np.clip(np.round(values), 16, pack // 2).astype(np.int64)


def test_docstring_example() -> None:
    model = CostModel(dense=1.0, attention=0.1)
    lengths = [5, 3, 1, 1, 1]
    plan = balanced_pack(lengths, 10, model)
    assert plan.algorithm == "balanced"
    assert sorted(sorted(lengths[i] for i in pack) for pack in plan.to_lists()) == [[1, 1, 1, 3], [5]]
    assert sorted(np.round(sum(pack_costs(plan, model)), 6).tolist()) == [7.2, 7.5]


def test_cheapest_fit_opens_a_pack_only_when_nothing_has_room() -> None:
    seq = np.array([6, 6, 5], dtype=np.int64)
    bin_of, n_bins = cheapest_fit(seq, 10, 1, 0.0, 1.0)
    assert bin_of.tolist() == [0, 1, 2] and n_bins == 3


def test_cheapest_fit_grows_past_the_packs_it_started_with() -> None:
    """Its per-pack arrays start at the reference's packs and double as packs open past them (memory
    follows the packs, not the samples): 300 full-size lengths from no open pack make 300 packs."""
    seq = np.full(300, 10, dtype=np.int64)
    bin_of, n_bins = cheapest_fit(seq, 10, 0, 0.1, 1.0)
    assert bin_of.tolist() == list(range(300)) and n_bins == 300
    bin_of, n_bins = cheapest_fit(np.array([6, 6, 5, 4, 4, 4], dtype=np.int64), 10, 2, 0.1, 1.0)
    assert n_bins == 3 and sorted(np.bincount(bin_of).tolist()) == [2, 2, 2]


@given(
    st.lists(st.integers(0, 64), min_size=0, max_size=300),
    st.integers(64, 128),
    st.floats(0.0, 1.0),
)
def test_every_item_once_and_capacity(lengths: list[int], pack: int, attention: float) -> None:
    model = CostModel(dense=1.0, attention=attention)
    plan = balanced_pack(lengths, pack, model)
    assert sorted(plan.items.tolist()) == list(range(len(lengths)))
    assert (plan.pack_sums <= pack).all()
    assert (np.diff(plan.pack_offsets) > 0).all()
    reference = pack_lengths(lengths, pack, algorithm="best_fit_decreasing")
    if lengths:
        assert efficiency(plan) >= efficiency(reference) - EFFICIENCY_TOLERANCE
        assert cost_spread(plan, model) <= cost_spread(reference, model) + 1e-12


@pytest.mark.parametrize(("pack", "seed"), [(16384, 0), (32768, 1)])
def test_realistic_long_tail(pack: int, seed: int) -> None:
    lengths = long_tail(40_000, pack, seed)
    plan = balanced_pack(lengths, pack, MODEL)
    bfd = pack_lengths(lengths, pack, algorithm="best_fit_decreasing")
    ffs = pack_lengths(lengths, pack, algorithm="first_fit_shuffle")
    assert plan.algorithm == "balanced"
    assert efficiency(plan) >= efficiency(bfd) - EFFICIENCY_TOLERANCE
    spread = cost_spread(plan, MODEL)
    assert spread < cost_spread(ffs, MODEL) / 2
    assert spread < cost_spread(bfd, MODEL) / 2
