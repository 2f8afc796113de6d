"""CP alignment multiple and zigzag partition (bridge-format §7): identity of reassembly, balance, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.batching import (
    PackedCollator,
    partition_packed_batch,
    partition_rows,
    partition_thd,
    unpartition_rows,
    unpartition_thd,
    zigzag_indices,
)
from bridgepack.errors import DataError
from bridgepack.packing import pad_multiple


def test_pad_multiple_table() -> None:
    assert pad_multiple() == 1
    assert pad_multiple(cp=1, tp=4, sequence_parallel=True) == 4
    assert pad_multiple(cp=8) == 16
    assert pad_multiple(cp=2, tp=4, sequence_parallel=True) == 8  # lcm(4, 8)
    assert pad_multiple(cp=3, tp=2, sequence_parallel=True) == 6  # lcm(6, 6)


def test_zigzag_by_hand() -> None:
    # One sequence of 8, CP 2: chunks [0 1][2 3][4 5][6 7]; rank 0 keeps chunks 0 and 3, rank 1 keeps 1, 2.
    assert zigzag_indices([0, 8], 2, 0).tolist() == [0, 1, 6, 7]
    assert zigzag_indices([0, 8], 2, 1).tolist() == [2, 3, 4, 5]
    # Two sequences of 4 and 8, CP 2: per sequence, cu_seqlens stay global.
    assert zigzag_indices([0, 4, 12], 2, 0).tolist() == [0, 3, 4, 5, 10, 11]
    assert zigzag_indices([0, 4, 12, 12], 2, 1).tolist() == [1, 2, 6, 7, 8, 9]


@st.composite
def _packed(draw: st.DrawFn) -> tuple[int, list[int]]:
    cp = draw(st.integers(1, 4))
    chunks = draw(st.lists(st.integers(0, 5), min_size=1, max_size=6))
    return cp, [0, *np.cumsum([c * 2 * cp for c in chunks]).tolist()]


@given(_packed(), st.integers(1, 3))
def test_reassembly_is_identity_and_ranks_balanced(case: tuple[int, list[int]], features: int) -> None:
    cp, cu = case
    row = np.arange(cu[-1] * features).reshape(features, cu[-1])
    shards = [partition_thd(row, cu, cp, r) for r in range(cp)]
    assert {s.shape[1] for s in shards} == {cu[-1] // cp}
    assert np.array_equal(unpartition_thd(shards, cu, cp), row)
    every = np.sort(np.concatenate([zigzag_indices(cu, cp, r) for r in range(cp)]))
    assert np.array_equal(every, np.arange(cu[-1]))


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3))
def test_plain_rows_round_trip(cp: int, chunk: int, batch: int) -> None:
    rows = np.random.default_rng(cp * chunk).normal(size=(batch, 2 * cp * chunk))
    shards = [partition_rows(rows, cp, r) for r in range(cp)]
    assert np.array_equal(unpartition_rows(shards, cp), rows)


def test_errors_name_the_sequence() -> None:
    with pytest.raises(DataError, match="sequence 1: length 6 is not divisible by 2\\*CP = 4"):
        zigzag_indices([0, 8, 14, 16], 2, 0)
    with pytest.raises(DataError, match="length 10 is not divisible by 2\\*CP = 4"):
        partition_rows(np.zeros((1, 10)), 2, 0)


def test_partition_collated_batch() -> None:
    # P = 4 = 2*CP pre-padding, fixed width 12; sequences of runtime 4 and 4 plus a tail of 4.
    items = [
        {
            "input_ids": [10, 11, 12, 2, 2, 20, 21, 2, 2, 2],
            "seq_boundaries": [0, 5, 10],
            "loss_mask": [1] * 10,
        },
        {"input_ids": [30, 31, 32, 33, 34, 35, 36, 37, 2], "seq_boundaries": [0, 9], "loss_mask": [1] * 9},
    ]
    batch = PackedCollator(2, 12, pad_to_max_length=True, pad_seq_to_mult=4)(items)
    shards = [partition_packed_batch(batch, 2, r) for r in range(2)]
    assert shards[0]["tokens"].shape == (2, 6)
    assert shards[0]["position_ids"][0].tolist() == [0, 3, 0, 3, 0, 0]  # the tail has positions 0
    assert torch.equal(shards[1]["cu_seqlens_q_padded"], batch["cu_seqlens_q_padded"])
    for key in ("tokens", "labels", "loss_mask", "position_ids"):
        for i in range(2):
            cu = batch["cu_seqlens_q_padded"][i].numpy()
            whole = unpartition_thd([s[key][i].numpy() for s in shards], cu, 2)
            assert np.array_equal(whole, batch[key][i].numpy())
    ragged = PackedCollator(2, 12, pad_seq_length_to_mult=1, pad_seq_to_mult=4)(items[:1])
    with pytest.raises(DataError, match="batch width 8"):
        partition_packed_batch(ragged, 8, 0)


@given(_packed(), st.data())
def test_any_indivisible_length_is_named(case: tuple[int, list[int]], data: st.DataObject) -> None:
    cp, cu = case
    if cp == 1:
        return
    lengths = np.diff(cu).tolist()
    k = data.draw(st.integers(0, len(lengths) - 1))
    lengths[k] += data.draw(st.integers(1, 2 * cp - 1))
    bad_cu = [0, *np.cumsum(lengths).tolist()]
    with pytest.raises(
        DataError, match=rf"^sequence {k}: length {lengths[k]} is not divisible by 2\*CP = {2 * cp}"
    ):
        zigzag_indices(bad_cu, cp, data.draw(st.integers(0, cp - 1)))
