"""bridgepack's Bridge algorithms against Megatron-Bridge 0.6.2's own offline steps, loaded from its wheel.

Bridge runs ``create_hist`` -> ``create_packing_strategy`` -> ``fill_packing_strategy`` under
``np.random.seed(seed)`` (bridge-format §2). Each example's ``input_ids`` are its own index repeated, so the
packed rows say which example sits where; bridgepack must put the same examples in the same packs in the same
order.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _support.peers import bridge_algorithms
from bridgepack.packing import BRIDGE_ALGORITHMS, pack_lengths

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def bridge() -> types.ModuleType:
    return bridge_algorithms()


def run_bridge(
    bridge: types.ModuleType,
    lengths: list[int],
    pack_size: int,
    algorithm: str,
    seed: int,
    max_seq_length: int,
) -> tuple[list[list[int]], dict[str, Any]]:
    """Bridge's three steps as ``prepare_packed_sequence_data`` calls them; returns example ids per pack."""
    dataset = [{"input_ids": [i] * (r + 1), "loss_mask": [1] * (r + 1)} for i, r in enumerate(lengths)]
    sequences, histogram = bridge.create_hist(dataset, max_seq_length)
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        assignments, metadata = bridge.create_packing_strategy(histogram, pack_size, algorithm)
        rows = bridge.fill_packing_strategy(assignments, sequences, pack_size, 0)
    finally:
        np.random.set_state(state)
    return [[row["input_ids"][start] for start in row["seq_start_id"]] for row in rows], metadata


def bridgepack_packs(
    lengths: list[int], pack_size: int, algorithm: str, seed: int, max_seq_length: int
) -> tuple[list[list[int]], dict[str, Any]]:
    """bridgepack on the lengths Bridge keeps (r <= max_seq_length), mapped back to example ids."""
    array = np.array(lengths, dtype=np.int64)
    kept = np.flatnonzero(array <= max_seq_length)
    plan = pack_lengths(array[kept], pack_size, algorithm=algorithm, seed=seed)
    return [kept[p].tolist() for p in plan.to_lists()], plan.bridge_metadata()


def test_spec_worked_example_matches_bridge(bridge: types.ModuleType) -> None:
    lengths = [4, 2, 6, 3, 2, 5]
    assert bridgepack_packs(lengths, 10, "first_fit_shuffle", 0, 10) == run_bridge(
        bridge, lengths, 10, "first_fit_shuffle", 0, 10
    )


def test_legacy_shuffle_of_a_list_draws_like_randomstate_on_an_array() -> None:
    """The assumption behind replaying Bridge's RNG without touching global state."""
    values = list(range(50))
    state = np.random.get_state()
    np.random.seed(7)
    try:
        np.random.shuffle(values)
        first_perm = np.random.permutation(13).tolist()
    finally:
        np.random.set_state(state)
    rng = np.random.RandomState(7)
    array = np.arange(50, dtype=np.int64)
    rng.shuffle(array)
    assert array.tolist() == values
    assert rng.permutation(13).tolist() == first_perm


def generated(kind: str, seed: int) -> tuple[list[int], int, int]:
    """(runtime lengths, pack size, max_seq_length) of a generated dataset."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, 65, size=500).tolist(), 64, 64
    if kind == "drops_long":  # max_seq_length below the pack: Bridge's create_hist drops r > 40
        return rng.integers(1, 61, size=400).tolist(), 64, 40
    if kind == "many_equal":  # few distinct lengths, long buckets: the fill's pops matter
        return rng.choice([3, 7, 16, 31], size=600).tolist(), 32, 32
    if kind == "lognormal":
        lengths = np.clip(np.round(rng.lognormal(np.log(60), 0.8, size=2000)), 1, 256)
        return lengths.astype(int).tolist(), 256, 256
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["uniform", "drops_long", "many_equal", "lognormal"])
@pytest.mark.parametrize("algorithm", BRIDGE_ALGORITHMS)
@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_same_packs_same_order_as_bridge(
    bridge: types.ModuleType, kind: str, algorithm: str, seed: int
) -> None:
    lengths, pack_size, max_seq_length = generated(kind, seed)
    ours, our_meta = bridgepack_packs(lengths, pack_size, algorithm, seed, max_seq_length)
    theirs, their_meta = run_bridge(bridge, lengths, pack_size, algorithm, seed, max_seq_length)
    assert ours == theirs
    assert our_meta == their_meta and list(our_meta) == list(their_meta)


bridge_cases = st.integers(1, 24).flatmap(
    lambda pack: st.tuples(
        st.just(pack),
        st.lists(st.integers(0, pack + 3), min_size=1, max_size=80),
        st.integers(0, pack),
        st.sampled_from(BRIDGE_ALGORITHMS),
        st.integers(0, 2**32 - 1),
    )
)


@settings(max_examples=40)
@given(case=bridge_cases)
def test_random_datasets_match_bridge(
    bridge: types.ModuleType, case: tuple[int, list[int], int, str, int]
) -> None:
    """Zero lengths, ties, drops above max_seq_length, any seed: still Bridge's packs in Bridge's order."""
    pack_size, lengths, max_seq_length, algorithm, seed = case
    assume(any(r <= max_seq_length for r in lengths))  # Bridge cannot pack an empty histogram
    ours = bridgepack_packs(lengths, pack_size, algorithm, seed, max_seq_length)
    assert ours == run_bridge(bridge, lengths, pack_size, algorithm, seed, max_seq_length)
