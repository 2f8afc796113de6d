"""Step composition: packed rows from Bridge's collate, padded rows cut from them, the sampler's batches."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from bridgepack.batching import PackedCollator, PackedItem
from bridgepack.train._steps import rank_microbatches


def _item(sequences: list[list[int]]) -> PackedItem:
    ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences])
    bounds = np.cumsum([0] + [len(s) for s in sequences])
    mask = np.concatenate([[1] * (len(s) - 1) + [0] for s in sequences]).astype(np.int64)
    return {"input_ids": ids, "seq_boundaries": bounds, "loss_mask": mask}


# Bridge's own collate vector (bridge-format §5, P=1, max 8, EOS 2).
ITEMS = [_item([[10, 11, 12, 13], [20, 21, 22, 23]]), _item([list(range(30, 38))])]
COLLATOR = PackedCollator(2, 8, pad_seq_length_to_mult=1)


def test_packed_micro_batches_are_the_collated_rows() -> None:
    (whole,) = rank_microbatches(ITEMS, COLLATOR, mbs=2, padded_length=None)
    assert whole.tokens.tolist() == [[10, 11, 12, 20, 21, 22, 2], list(range(30, 37))]
    assert whole.position_ids.tolist() == [[0, 1, 2, 0, 1, 2, 0], list(range(7))]
    assert whole.positions == 14 and whole.real_tokens == 13 and whole.loss_tokens == 13
    # mbs 1: the width still spans the rank's global batch (Bridge collates it at once, then splits).
    first, second = rank_microbatches(ITEMS, COLLATOR, mbs=1, padded_length=None)
    assert first.tokens.tolist() == [[10, 11, 12, 20, 21, 22, 2]]
    assert first.real_tokens == 6 and second.real_tokens == 7


def test_padded_rows_hold_the_same_sequences() -> None:
    (mb,) = rank_microbatches(ITEMS, COLLATOR, mbs=2, padded_length=9)
    assert mb.tokens.tolist() == [
        [10, 11, 12, 2, 2, 2, 2, 2, 2],
        [20, 21, 22, 2, 2, 2, 2, 2, 2],
        [30, 31, 32, 33, 34, 35, 36, 2, 2],
    ]
    assert mb.labels.tolist()[0][:3] == [11, 12, 13]
    assert mb.position_ids.tolist()[1] == list(range(9))
    assert mb.loss_mask.sum() == 13 and mb.loss_mask[0].tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert mb.positions == 27 and mb.real_tokens == 13


def test_padded_rows_keep_alignment_padding_masked() -> None:
    # P=4 vector of bridge-format §5: stored [10 11 12 2 2 | 20 21 2 2 2]; the EOS inputs carry no loss.
    item = _item([[10, 11, 12, 2, 2], [20, 21, 2, 2, 2]])
    collator = PackedCollator(2, 8, pad_seq_to_mult=4)
    (packed,) = rank_microbatches([item], collator, mbs=1, padded_length=None)
    (padded,) = rank_microbatches([item], collator, mbs=1, padded_length=4)
    assert packed.tokens.tolist() == [[10, 11, 12, 2, 20, 21, 2, 2]]
    assert padded.tokens.tolist() == [[10, 11, 12, 2], [20, 21, 2, 2]]
    assert torch.equal(padded.loss_mask.reshape(-1), packed.loss_mask.reshape(-1))


@given(
    lengths=st.lists(st.lists(st.integers(1, 12), min_size=1, max_size=4), min_size=1, max_size=4),
    mbs=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_padded_rows_are_the_packed_sequences(lengths: list[list[int]], mbs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = []
    for pack in lengths:
        seqs = [[*rng.integers(3, 40, size=n).tolist(), 2] for n in pack]
        item = _item(seqs)
        item["loss_mask"] = rng.integers(0, 2, size=item["input_ids"].size)
        items.append(item)
    pack_size = max(sum(pack) for pack in lengths)
    collator = PackedCollator(2, pack_size)
    packed = rank_microbatches(items, collator, mbs=mbs, padded_length=None)
    padded = rank_microbatches(items, collator, mbs=mbs, padded_length=pack_size)  # the default --pad-to
    assert len(packed) == len(padded) == -(-len(items) // mbs)
    assert sum(m.positions for m in padded) >= sum(m.positions for m in packed)
    for a, b, chunk in zip(
        packed, padded, [lengths[i : i + mbs] for i in range(0, len(items), mbs)], strict=True
    ):
        assert a.real_tokens == b.real_tokens == sum(map(sum, chunk))
        assert a.loss_tokens == b.loss_tokens
        assert b.positions == pack_size * sum(map(len, chunk))
        # Row by row, sequence by sequence: the padded row is the packed slice, then EOS with no loss.
        r = 0
        for i, pack in enumerate(chunk):
            start = 0
            for n in pack:
                for key in ("tokens", "labels", "loss_mask"):
                    got, want = getattr(b, key)[r], getattr(a, key)[i, start : start + n]
                    assert torch.equal(got[:n], want)
                assert b.loss_mask[r, n:].sum() == 0 and (b.tokens[r, n:] == 2).all()
                assert b.position_ids[r, :n].tolist() == a.position_ids[i, start : start + n].tolist()
                start += n
                r += 1
