"""GlobalBatchSampler: index for index the same as Bridge 0.6.2's MegatronPretrainingBatchSampler."""

from __future__ import annotations

import functools
import itertools
import types

import pytest

from bridgepack.batching import PAD_INDEX, GlobalBatchSampler
from bridgepack.errors import UsageError


@functools.cache
def _bridge_samplers() -> types.ModuleType:
    from _support.bridge_batching import bridge_module

    return bridge_module("data/samplers.py", "bridge_samplers")  # imports only numpy and torch


def test_interleaved_dealing_and_padding_by_hand() -> None:
    # shuffle off: global batches [0..7], [8..9]; DP 2 deals even positions to rank 0, odd to rank 1.
    rank0 = GlobalBatchSampler(10, 8, 0, 2, drop_last=False, shuffle=False)
    rank1 = GlobalBatchSampler(10, 8, 1, 2, drop_last=False, shuffle=False)
    assert list(rank0) == [[0, 2, 4, 6], [8, PAD_INDEX, PAD_INDEX, PAD_INDEX]]
    assert list(rank1) == [[1, 3, 5, 7], [9, PAD_INDEX, PAD_INDEX, PAD_INDEX]]
    assert list(GlobalBatchSampler(10, 8, 0, 2, shuffle=False)) == [[0, 2, 4, 6]]


def test_every_row_once_per_epoch_across_ranks() -> None:
    samplers = [GlobalBatchSampler(64, 16, r, 4, seed=3) for r in range(4)]
    seen = sorted(i for s in samplers for batch in s for i in batch)
    assert seen == list(range(64))


def test_errors() -> None:
    with pytest.raises(UsageError, match="not divisible"):
        GlobalBatchSampler(100, 10, 0, 4)
    with pytest.raises(UsageError, match="one full global batch"):
        GlobalBatchSampler(5, 8, 0, 2)
    with pytest.raises(UsageError, match="rank"):
        GlobalBatchSampler(16, 8, 2, 2)


@pytest.mark.network
@pytest.mark.parametrize(
    ("total", "gbs", "dp", "mbs", "drop_last", "consumed", "seed"),
    [
        (100, 8, 2, 1, True, 0, 1234),
        (100, 8, 2, 1, False, 0, 7),
        (37, 12, 3, 2, False, 0, 0),
        (37, 12, 3, 1, True, 24, 5),
        (50, 10, 5, 1, False, 130, 42),
        (9, 9, 1, 1, True, 0, 11),
    ],
)
def test_same_indices_as_bridge(
    total: int, gbs: int, dp: int, mbs: int, drop_last: bool, consumed: int, seed: int
) -> None:
    bridge = _bridge_samplers()
    for rank in range(dp):
        theirs = bridge.MegatronPretrainingBatchSampler(
            total_samples=total, consumed_samples=consumed, micro_batch_size=mbs, global_batch_size=gbs,
            data_parallel_rank=rank, data_parallel_size=dp, drop_last=drop_last,
            pad_samples_to_global_batch_size=not drop_last, seed=seed,
        )  # fmt: skip
        ours = GlobalBatchSampler(
            total,
            gbs,
            rank,
            dp,
            micro_batch_size=mbs,
            consumed_samples=consumed,
            drop_last=drop_last,
            seed=seed,
        )
        assert len(ours) == len(theirs)
        for _epoch in range(3):  # re-iterating starts the next epoch in both
            want = list(theirs)
            assert list(ours) == want
            assert ours.consumed_samples == theirs.consumed_samples
        assert list(itertools.islice(iter(ours), 1)) == list(itertools.islice(iter(theirs), 1))
