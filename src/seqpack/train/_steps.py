"""What each optimizer step trains on, in packed and in padded mode, so both modes see the same samples.

A step is one global batch of ``gbs`` **packs**, drawn as Bridge's batch sampler draws them (spec §5): every
epoch a ``torch.randperm`` of all packs seeded ``seed + epoch``, cut into global batches of ``gbs`` (the
last incomplete one dropped), rank ``r`` of ``DP`` taking ``batch[r::DP]``. The rank's packs are split into
micro-batches of ``mbs`` packs. Then:

* packed mode feeds each micro-batch as its rows, one pack per row (positions restart per sequence);
* padded mode feeds the *sequences of the same packs*, one per row, right-padded to a fixed length.

So micro-batch ``i`` of rank ``r`` at step ``s`` holds the same sequences in both modes; with the per-token
loss (spec §9) the step's loss and gradient are the same sums, only the layout differs. Two packs of
runtime lengths ``[3, 2]`` and ``[4]`` (pack size 6, pad length 6)::

    packed rows (width 16-rounded, capped at 6)   padded rows (length 6)
    t0 t1 t2 u0 u1 .                               t0 t1 t2 .  .  .
    v0 v1 v2 v3 .  .                               u0 u1 .  .  .  .
                                                   v0 v1 v2 v3 .  .
    positions 12 slots, 9 real                     18 slots, 9 real
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqpack.data import PackedRow


def epoch_batches(num_rows: int, gbs: int, seed: int, epoch: int) -> np.ndarray:
    """The global batches of one epoch as pack indices, shape ``[num_rows // gbs, gbs]`` (drop last)."""
    generator = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(num_rows, generator=generator).numpy()
    steps = num_rows // gbs
    return order[: steps * gbs].reshape(steps, gbs)


@dataclass(frozen=True)
class MicroBatch:
    """Model inputs of one micro-batch plus the counts the run reports.

    ``positions`` = rows x width (every slot the model computes); ``real_tokens`` = slots holding a
    sequence's own input tokens; ``loss_tokens`` = ``loss_mask.sum()``.
    """

    tokens: torch.Tensor
    labels: torch.Tensor
    loss_mask: torch.Tensor
    position_ids: torch.Tensor
    positions: int
    real_tokens: int
    loss_tokens: int


@dataclass(frozen=True)
class _Sequences:
    """Input-side view of one pack: every sequence minus its last stored token (inputs) or first (labels)."""

    tokens: np.ndarray
    labels: np.ndarray
    loss_mask: np.ndarray
    positions: np.ndarray
    starts: np.ndarray  # start of each sequence in the input-side arrays, plus the total


def _split_pack(row: PackedRow, eos_id: int) -> _Sequences:
    """Bridge 0.6.2's packed collate for one row (spec §5), without the width padding.

    Stored ``[10 11 12 2 | 20 21 2]``, mask ``[1 1 1 0 | 1 1 0]`` -> tokens ``[10 11 12 20 21]``, labels
    ``[11 12 2 21 2]``, loss mask ``[1 1 1 1 1]``, positions ``[0 1 2 0 1]``; inputs equal to EOS get loss 0.
    """
    ids = np.asarray(row.input_ids, dtype=np.int64)
    stored_starts = np.asarray(row.seq_start_id, dtype=np.int64)
    ends = np.append(stored_starts[1:], ids.size)
    keep = np.ones(ids.size, dtype=bool)
    keep[ends - 1] = False
    index = np.flatnonzero(keep)
    runtime = ends - stored_starts - 1
    starts = np.concatenate([[0], np.cumsum(runtime)])
    seq_of = np.repeat(np.arange(runtime.size), runtime)
    tokens = ids[index]
    mask = np.asarray(row.loss_mask, dtype=np.int64)[index]
    mask[tokens == eos_id] = 0
    return _Sequences(
        tokens=tokens,
        labels=ids[index + 1],
        loss_mask=mask,
        positions=np.arange(index.size, dtype=np.int64) - starts[seq_of],
        starts=starts,
    )


def _tensors(
    tokens: np.ndarray, labels: np.ndarray, mask: np.ndarray, positions: np.ndarray, real: int
) -> MicroBatch:
    return MicroBatch(
        tokens=torch.from_numpy(tokens),
        labels=torch.from_numpy(labels),
        loss_mask=torch.from_numpy(mask.astype(np.float32)),
        position_ids=torch.from_numpy(positions),
        positions=int(tokens.size),
        real_tokens=real,
        loss_tokens=int(mask.sum()),
    )


def packed_width(runtime_sizes: Sequence[int], pack_size: int, multiple: int) -> int:
    """Row width of a rank's global batch: ``min(pack_size, ceil(longest, multiple))`` (spec §5)."""
    longest = max(1, max(int(s) for s in runtime_sizes))
    return min(pack_size, -(-longest // multiple) * multiple) if multiple > 1 else longest


def packed_microbatch(packs: Sequence[_Sequences], width: int, eos_id: int) -> MicroBatch:
    """Packs as rows of ``width``; the tail is EOS tokens/labels, loss 0, position 0 (spec §5)."""
    b = len(packs)
    tokens = np.full((b, width), eos_id, dtype=np.int64)
    labels = np.full((b, width), eos_id, dtype=np.int64)
    mask = np.zeros((b, width), dtype=np.int64)
    positions = np.zeros((b, width), dtype=np.int64)
    real = 0
    for i, p in enumerate(packs):
        n = p.tokens.size
        tokens[i, :n], labels[i, :n], mask[i, :n], positions[i, :n] = (
            p.tokens,
            p.labels,
            p.loss_mask,
            p.positions,
        )
        real += n
    return _tensors(tokens, labels, mask, positions, real)


def padded_microbatch(packs: Sequence[_Sequences], length: int, eos_id: int) -> MicroBatch:
    """Every sequence of the packs as its own row, right-padded with EOS (loss 0) to ``length``.

    No attention mask is needed: right padding sits after every real token, and causal attention never
    looks ahead, so the real tokens' outputs do not depend on the padding.
    """
    rows = sum(p.starts.size - 1 for p in packs)
    tokens = np.full((rows, length), eos_id, dtype=np.int64)
    labels = np.full((rows, length), eos_id, dtype=np.int64)
    mask = np.zeros((rows, length), dtype=np.int64)
    positions = np.broadcast_to(np.arange(length, dtype=np.int64), (rows, length)).copy()
    r = 0
    real = 0
    for p in packs:
        for a, z in zip(p.starts[:-1], p.starts[1:], strict=True):
            n = int(z - a)
            tokens[r, :n], labels[r, :n], mask[r, :n] = p.tokens[a:z], p.labels[a:z], p.loss_mask[a:z]
            r += 1
            real += n
    return _tensors(tokens, labels, mask, positions, real)


def rank_microbatches(
    rows: Sequence[PackedRow],
    runtime_sizes: Sequence[int],
    *,
    mbs: int,
    padded_length: int | None,
    pack_size: int,
    width_multiple: int,
    eos_id: int,
) -> list[MicroBatch]:
    """A rank's share of one step as micro-batches of ``mbs`` packs (padded mode: their sequences)."""
    packs = [_split_pack(row, eos_id) for row in rows]
    chunks = [packs[i : i + mbs] for i in range(0, len(packs), mbs)]
    if padded_length is not None:
        return [padded_microbatch(chunk, padded_length, eos_id) for chunk in chunks]
    width = packed_width(runtime_sizes, pack_size, width_multiple)
    return [packed_microbatch(chunk, width, eos_id) for chunk in chunks]
