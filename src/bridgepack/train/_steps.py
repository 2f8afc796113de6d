"""What each optimizer step trains on, in packed and in padded mode, so both modes see the same samples.

A step is one global batch of ``gbs`` **packs**, drawn by :class:`~bridgepack.batching.GlobalBatchSampler`
(Bridge's sampler, bridge-format §5: a ``randperm`` of all packs per epoch seeded ``seed + epoch``, rank ``r``
of ``DP`` taking ``batch[r::DP]``, the last incomplete batch dropped). The rank's packs go through
:class:`~bridgepack.batching.PackedCollator` at once (Bridge's 0.6.2 collate: the width spans the rank's
global batch) and the collated rows are cut into micro-batches of ``mbs`` rows. Then:

* packed mode feeds those rows as they are, one pack per row (positions restart per sequence);
* padded mode cuts the *same collated rows* at their sequence boundaries and feeds every sequence as its
  own row, right-padded with EOS (loss 0) to a fixed length.

So micro-batch ``i`` of rank ``r`` at step ``s`` holds the same tokens, labels and loss mask in both modes;
with the per-token loss (bridge-format §9) the step's loss and gradient are the same sums, only the layout
differs.
Two packs of runtime lengths ``[3, 2]`` and ``[4]`` (pack size 6, padded length 6)::

    packed rows (width: ceil to 16, capped at 6)   padded rows (length 6)
    t0 t1 t2 u0 u1 .                               t0 t1 t2 .  .  .
    v0 v1 v2 v3 .  .                               u0 u1 .  .  .  .
                                                   v0 v1 v2 v3 .  .
    12 slots, 9 real                               18 slots, 9 real
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bridgepack.batching import GlobalBatchSampler, PackedCollator, PackedItem


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


def rank_batches(sampler: GlobalBatchSampler) -> Iterator[list[int]]:
    """The rank's pack indices step after step, epoch after epoch (the sampler re-shuffles each epoch)."""
    while True:
        yield from sampler


def _micro(
    tokens: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor, real: int
) -> MicroBatch:
    return MicroBatch(
        tokens=tokens,
        labels=labels,
        loss_mask=mask.to(torch.float32),
        position_ids=positions,
        positions=int(tokens.numel()),
        real_tokens=real,
        loss_tokens=int(mask.sum()),
    )


def _runtime_lengths(item: PackedItem) -> np.ndarray:
    """Input tokens per sequence of a pack: stored length minus one (bridge-format §2)."""
    return np.diff(np.asarray(item["seq_boundaries"], dtype=np.int64)) - 1


def _padded(
    batch: dict[str, torch.Tensor], items: Sequence[PackedItem], length: int, eos_id: int
) -> MicroBatch:
    """Every sequence of the collated rows as its own row, right-padded with EOS (loss 0) to ``length``.

    No attention mask is needed: right padding sits after every real token, and causal attention never
    looks ahead, so the real tokens' outputs do not depend on the padding.
    """
    lengths = [_runtime_lengths(item) for item in items]
    rows = sum(lens.size for lens in lengths)
    tokens = torch.full((rows, length), eos_id, dtype=torch.int64)
    labels = torch.full((rows, length), eos_id, dtype=torch.int64)
    mask = torch.zeros((rows, length), dtype=batch["loss_mask"].dtype)
    positions = torch.arange(length, dtype=torch.int64).expand(rows, length).clone()
    r = 0
    for i, lens in enumerate(lengths):
        start = 0
        for n in lens.tolist():
            tokens[r, :n] = batch["tokens"][i, start : start + n]
            labels[r, :n] = batch["labels"][i, start : start + n]
            mask[r, :n] = batch["loss_mask"][i, start : start + n]
            start += n
            r += 1
    return _micro(tokens, labels, mask, positions, int(sum(int(lens.sum()) for lens in lengths)))


def rank_microbatches(
    items: Sequence[PackedItem], collator: PackedCollator, *, mbs: int, padded_length: int | None
) -> list[MicroBatch]:
    """A rank's share of one step: collated as one batch, cut into micro-batches of ``mbs`` packs."""
    batch = collator(items)
    out = []
    for a in range(0, len(items), mbs):
        part = {key: batch[key][a : a + mbs] for key in ("tokens", "labels", "loss_mask", "position_ids")}
        chunk = items[a : a + mbs]
        if padded_length is not None:
            out.append(_padded(part, chunk, padded_length, collator.eos_id))
        else:
            real = int(sum(int(_runtime_lengths(item).sum()) for item in chunk))
            out.append(_micro(part["tokens"], part["labels"], part["loss_mask"], part["position_ids"], real))
    return out
