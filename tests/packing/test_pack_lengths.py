"""``pack_lengths`` and ``PackPlan``: the spec's worked example, errors, and invariants of every algorithm."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.errors import DataError, UsageError
from bridgepack.packing import ALGORITHMS, BRIDGE_METADATA_KEYS, PackPlan, pack_lengths

SPEC_LENGTHS = [4, 2, 6, 3, 2, 5]  # bridge-format §2 worked example: runtime lengths, pack 10, seed 0


def pack_length_lists(plan: PackPlan) -> list[list[int]]:
    return [plan.lengths[p].tolist() for p in plan.to_lists()]


def test_spec_worked_example() -> None:
    plan = pack_lengths(SPEC_LENGTHS, 10, algorithm="first_fit_shuffle", seed=0)
    assert pack_length_lists(plan) == [[6, 3], [2, 4, 2], [5]]
    assert plan.bridge_metadata() == {
        "dataset_max_seqlen": 6,
        "max_samples_per_bin": 3,
        "packing_factor": 2.0,
        "packing_efficiency": 73.33,
        "pack_size": 10,
        "min_packed_seqlen": 5,
    }
    assert tuple(plan.bridge_metadata()) == BRIDGE_METADATA_KEYS
    assert plan.pack_sums.tolist() == [9, 8, 5]
    assert plan.lower_bound == 3
    assert plan.pack_offsets.dtype == np.int64 and plan.items.dtype == np.int64


def test_plan_arrays_are_read_only() -> None:
    plan = pack_lengths(SPEC_LENGTHS, 10)
    with pytest.raises(ValueError):
        plan.items[0] = 1
    with pytest.raises(AttributeError):
        plan.seed = 3  # type: ignore[misc]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_empty_input_gives_an_empty_plan(algorithm: str) -> None:
    plan = pack_lengths(np.zeros(0, dtype=np.int64), 8, algorithm=algorithm)
    assert plan.num_packs == 0 and plan.items.size == 0 and plan.pack_offsets.tolist() == [0]
    assert plan.lower_bound == 0
    with pytest.raises(DataError, match="empty plan"):
        plan.bridge_metadata()


@pytest.mark.parametrize(
    ("lengths", "pack_size", "kwargs", "error", "match"),
    [
        ([3, 11, 2], 10, {}, DataError, r"lengths\[1\] = 11 is longer than the pack size 10"),
        ([3, -1], 10, {}, DataError, r"lengths\[1\] = -1 is negative"),
        ([3], 0, {}, UsageError, "pack size must be a positive integer"),
        ([3], 10, {"algorithm": "next_fit"}, UsageError, "unknown packing algorithm 'next_fit'"),
        ([3.0], 10, {}, UsageError, "lengths must be integers"),
        ([[3]], 10, {}, UsageError, "1-D"),
        ([3], 10, {"seed": -1}, UsageError, "seed must be"),
    ],
)
def test_bad_input_is_refused(
    lengths: list[int], pack_size: int, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        pack_lengths(lengths, pack_size, **kwargs)  # type: ignore[arg-type]


def test_best_fit_decreasing_can_use_more_packs_than_first_fit_decreasing() -> None:
    """'BFD <= FFD' is not a theorem. Pack 83: FFD fills {35,31,11,6} and {27,22,19,6,6} (the lower bound,
    ceil(163/83) = 2); BFD puts 19 on {35,27} (room 21), then 11 cannot join {31,22} and 6s strand a third."""
    lengths = [35, 31, 27, 22, 19, 11, 6, 6, 6]
    ffd = pack_lengths(lengths, 83, algorithm="first_fit_decreasing")
    bfd = pack_lengths(lengths, 83, algorithm="best_fit_decreasing")
    assert (ffd.num_packs, bfd.num_packs) == (2, 3)


cases = st.integers(1, 64).flatmap(
    lambda pack: st.tuples(
        st.just(pack),
        st.lists(st.integers(0, pack), max_size=200),
        st.sampled_from(ALGORITHMS),
        st.integers(0, 2**32 - 1),
    )
)


@given(cases)
def test_plan_invariants(case: tuple[int, list[int], str, int]) -> None:
    pack, lengths, algorithm, seed = case
    plan = pack_lengths(np.array(lengths, dtype=np.int64), pack, algorithm=algorithm, seed=seed)
    n = len(lengths)
    # every index exactly once
    assert sorted(plan.items.tolist()) == list(range(n))
    # CSR shape: offsets start at 0, end at n, strictly increasing (no empty pack)
    offsets = plan.pack_offsets
    assert offsets[0] == 0 and offsets[-1] == n and len(offsets) == plan.num_packs + 1
    assert np.all(np.diff(offsets) > 0)
    # capacity and consistent sums
    sums = [sum(lengths[i] for i in pack_items) for pack_items in plan.to_lists()]
    assert plan.pack_sums.tolist() == sums
    assert all(s <= pack for s in sums)
    assert plan.num_packs >= plan.lower_bound == math.ceil(sum(lengths) / pack)
    # any-fit property of first and best fit: a later pack's first item did not fit into any earlier
    # pack, so the loads of any two packs sum to more than the pack size
    if plan.num_packs >= 2:
        two_smallest = sorted(sums)[:2]
        assert sum(two_smallest) > pack
    if n:
        meta = plan.bridge_metadata()
        assert meta["dataset_max_seqlen"] == max(lengths)
        assert meta["max_samples_per_bin"] == max(len(p) for p in plan.to_lists())
        assert meta["packing_factor"] == round(n / plan.num_packs, 2)
        assert meta["packing_efficiency"] == round(sum(lengths) / plan.num_packs / pack * 100, 2)
        assert meta["min_packed_seqlen"] == min(sums)
    # deterministic for a seed
    again = pack_lengths(lengths, pack, algorithm=algorithm, seed=seed)
    assert again.items.tolist() == plan.items.tolist()
    assert again.pack_offsets.tolist() == offsets.tolist()


@given(st.lists(st.integers(1, 50), min_size=1, max_size=200))
def test_decreasing_orders_pack_longest_first(lengths: list[int]) -> None:
    """Both decreasing algorithms open pack 0 with a longest item; BFD keeps ties in input order."""
    for algorithm in ("first_fit_decreasing", "best_fit_decreasing"):
        plan = pack_lengths(lengths, 50, algorithm=algorithm)
        assert lengths[int(plan.items[0])] == max(lengths)
    bfd = pack_lengths(lengths, 50, algorithm="best_fit_decreasing")
    assert int(bfd.items[0]) == lengths.index(max(lengths))
