"""Step composition: Bridge's packed collate vectors (spec §5) and the sampler's global batches."""

from __future__ import annotations

import numpy as np
import torch

from seqpack.data import PackedRow
from seqpack.train import epoch_batches
from seqpack.train._steps import rank_microbatches


def _row(sequences: list[list[int]], masks: list[list[int]] | None = None) -> PackedRow:
    starts = np.cumsum([0] + [len(s) for s in sequences[:-1]])
    ids = np.concatenate([np.asarray(s) for s in sequences])
    mask = (
        np.concatenate([np.asarray(m) for m in masks])
        if masks
        else np.concatenate([[1] * (len(s) - 1) + [0] for s in sequences])
    )
    return PackedRow(input_ids=ids, loss_mask=mask.astype(np.int8), seq_start_id=starts)


def test_packed_collate_matches_bridge_vector_pad_multiple_1() -> None:
    rows = [_row([[10, 11, 12, 13], [20, 21, 22, 23]]), _row([list(range(30, 38))])]
    (mb,) = rank_microbatches(
        rows, [6, 7], mbs=2, padded_length=None, pack_size=8, width_multiple=1, eos_id=2
    )
    assert mb.tokens.tolist() == [[10, 11, 12, 20, 21, 22, 2], list(range(30, 37))]
    assert mb.labels.tolist() == [[11, 12, 13, 21, 22, 23, 2], list(range(31, 38))]
    assert mb.position_ids.tolist() == [[0, 1, 2, 0, 1, 2, 0], list(range(7))]
    assert mb.positions == 14 and mb.real_tokens == 13


def test_packed_collate_matches_bridge_vector_pad_multiple_4() -> None:
    row = _row([[10, 11, 12, 2, 2], [20, 21, 2, 2, 2]], [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    (mb,) = rank_microbatches([row], [8], mbs=1, padded_length=None, pack_size=8, width_multiple=16, eos_id=2)
    assert mb.tokens.tolist() == [[10, 11, 12, 2, 20, 21, 2, 2]]
    assert mb.position_ids.tolist() == [[0, 1, 2, 3, 0, 1, 2, 3]]
    # 0.6.2 zeroes the loss wherever the input token is EOS.
    assert mb.loss_mask.tolist() == [[1, 1, 1, 0, 1, 1, 0, 0]]


def test_padded_rows_hold_the_same_sequences() -> None:
    rows = [_row([[10, 11, 12, 13], [20, 21, 22, 23]]), _row([list(range(30, 38))])]
    packed = rank_microbatches(
        rows, [6, 7], mbs=2, padded_length=None, pack_size=8, width_multiple=1, eos_id=2
    )
    (mb,) = rank_microbatches(rows, [6, 7], mbs=2, padded_length=9, pack_size=8, width_multiple=1, eos_id=2)
    assert mb.tokens.tolist() == [
        [10, 11, 12, 2, 2, 2, 2, 2, 2],
        [20, 21, 22, 2, 2, 2, 2, 2, 2],
        [30, 31, 32, 33, 34, 35, 36, 2, 2],
    ]
    assert mb.loss_mask.sum() == packed[0].loss_mask.sum() == 13
    assert mb.positions == 27 and mb.real_tokens == packed[0].real_tokens


def test_epoch_batches_follow_bridge_sampler() -> None:
    # Bridge's MegatronPretrainingBatchSampler: randperm(total, manual_seed(seed + epoch)), full batches only.
    batches = epoch_batches(10, 4, seed=7, epoch=2)
    order = torch.randperm(10, generator=torch.Generator().manual_seed(9)).tolist()
    assert batches.tolist() == [order[0:4], order[4:8]]
    assert epoch_batches(10, 4, seed=7, epoch=3).tolist() != batches.tolist()
