"""The numba kernels against plain-Python statements of the same rules (no Bridge needed)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.packing._kernels import best_fit, first_fit, group_by_bin, order_by_length


def naive_first_fit(seq: list[int], pack_size: int) -> list[int]:
    """Lowest-index bin with room, by a linear scan."""
    remaining: list[int] = []
    bin_of = []
    for need in seq:
        for b, room in enumerate(remaining):
            if room >= need:
                remaining[b] -= need
                bin_of.append(b)
                break
        else:
            remaining.append(pack_size - need)
            bin_of.append(len(remaining) - 1)
    return bin_of


def naive_best_fit_loads(seq: list[int], pack_size: int) -> list[int]:
    """Loads of the bins best fit makes (tightest bin with room), by a linear scan."""
    loads: list[int] = []
    for need in seq:
        fitting = [b for b, load in enumerate(loads) if pack_size - load >= need]
        if fitting:
            loads[min(fitting, key=lambda b: pack_size - loads[b])] += need
        else:
            loads.append(need)
    return loads


sequences = st.integers(1, 40).flatmap(
    lambda pack: st.tuples(st.just(pack), st.lists(st.integers(0, pack), max_size=120))
)


@given(sequences)
def test_first_fit_matches_linear_scan(case: tuple[int, list[int]]) -> None:
    pack, seq = case
    bin_of, n_bins = first_fit(np.array(seq, dtype=np.int64), pack)
    expected = naive_first_fit(seq, pack)
    assert bin_of.tolist() == expected
    assert n_bins == (max(expected) + 1 if expected else 0)


@given(sequences)
def test_best_fit_matches_linear_scan(case: tuple[int, list[int]]) -> None:
    pack, seq = case
    bin_of, n_bins = best_fit(np.array(seq, dtype=np.int64), pack)
    loads = np.bincount(bin_of, weights=seq, minlength=n_bins).astype(int) if seq else np.zeros(0, int)
    # Bins of equal remaining capacity are interchangeable, so the multiset of loads is what best fit fixes.
    assert sorted(loads.tolist()) == sorted(naive_best_fit_loads(seq, pack))


def test_order_by_length_is_a_stable_counting_sort() -> None:
    lengths = np.array([3, 1, 3, 0, 1], dtype=np.int64)
    order, counts = order_by_length(lengths, False)
    assert order.tolist() == [3, 1, 4, 0, 2]
    assert counts.tolist() == [1, 2, 0, 2]  # sized by the longest length, not by any pack size
    order, _ = order_by_length(lengths, True)
    assert order.tolist() == [0, 2, 1, 4, 3]


def test_group_by_bin_keeps_arrival_order() -> None:
    offsets, positions = group_by_bin(np.array([0, 1, 0, 2], dtype=np.int64), 3)
    assert offsets.tolist() == [0, 2, 3, 4]
    assert positions.tolist() == [0, 2, 1, 3]
