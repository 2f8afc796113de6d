"""Context-parallel (CP) and sequence-parallel (SP) alignment (bridge-format §7).

Megatron splits every packed sequence into ``2*CP`` chunks for the zigzag CP layout and shards the
sequence dimension over TP ranks with sequence parallelism, so each stored sequence's runtime length
must be a multiple of::

    cp_mult = 2*CP if CP > 1 else 1
    sp_mult = CP*TP if sequence_parallel and TP > 1 else 1
    pad_seq_to_mult = lcm(cp_mult, sp_mult)

e.g. TP1/CP1 -> 1, TP4+SP/CP1 -> 4, CP8 -> 16. Changing the topology means re-packing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bridgepack.errors import DataError, UsageError

# ---------------------------------------------------------------------------------------------------------
# Zigzag partition (bridge-format §7). With CP ranks, every (physical) sequence of length L is cut into 2*CP
# chunks of L / (2*CP); rank r keeps chunks r and 2*CP-1-r, so causal attention work is balanced across ranks.
# With CP = 2 and one sequence of 8 tokens [0 1 2 3 4 5 6 7]: chunks [0 1][2 3][4 5][6 7]; rank 0 keeps
# [0 1 6 7], rank 1 keeps [2 3 4 5]. A packed row is partitioned sequence by sequence (``cu_seqlens`` stay
# global), a plain row as one sequence.


def _check_lengths(lengths: np.ndarray, cp: int, what: str) -> None:
    if cp < 1:
        raise UsageError(f"context parallel size must be >= 1, got {cp}")
    bad = np.flatnonzero(lengths % (2 * cp) != 0) if cp > 1 else np.zeros(0, np.int64)
    if bad.size:
        k = int(bad[0])
        raise DataError(
            f"{what} {k}: length {int(lengths[k])} is not divisible by 2*CP = {2 * cp} "
            "(pack with pad_seq_to_mult = pad_multiple(cp, ...) and a fixed width)"
        )


def zigzag_indices(cu_seqlens: Sequence[int] | np.ndarray, cp: int, rank: int) -> np.ndarray:
    """Positions of a packed row that CP rank ``rank`` keeps, in the order it holds them (int64).

    ``cu_seqlens`` are the physical offsets (``cu_seqlens_*_padded`` when P > 1), including the tail
    pseudo-sequence; zero-length entries (ragged-row repeats) are allowed.

    >>> zigzag_indices([0, 8], cp=2, rank=0).tolist(), zigzag_indices([0, 4, 8], cp=2, rank=1).tolist()
    ([0, 1, 6, 7], [1, 2, 5, 6])
    """
    cu = np.asarray(cu_seqlens, dtype=np.int64)
    if not 0 <= rank < max(cp, 1):
        raise UsageError(f"CP rank {rank} not in [0, {cp})")
    lengths = np.diff(cu)
    if (lengths < 0).any():
        raise DataError(f"cu_seqlens must be non-decreasing, got {cu.tolist()[:8]}")
    _check_lengths(lengths, cp, "sequence")
    if cp == 1:
        return np.arange(int(cu[-1]) - int(cu[0]), dtype=np.int64) + int(cu[0])
    chunk = lengths // (2 * cp)
    # Per sequence two runs of `chunk` positions: starting at chunk*rank and at chunk*(2cp-1-rank).
    firsts = np.stack([cu[:-1] + chunk * rank, cu[:-1] + chunk * (2 * cp - 1 - rank)], axis=1).reshape(-1)
    sizes = np.repeat(chunk, 2)
    run_starts = np.cumsum(sizes) - sizes
    return np.repeat(firsts - run_starts, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)


def partition_thd(
    values: np.ndarray, cu_seqlens: Sequence[int] | np.ndarray, cp: int, rank: int, axis: int = -1
) -> np.ndarray:
    """The shard of a packed row (``values`` along ``axis``) that CP rank ``rank`` holds."""
    return np.take(np.asarray(values), zigzag_indices(cu_seqlens, cp, rank), axis=axis)


def unpartition_thd(
    shards: Sequence[np.ndarray], cu_seqlens: Sequence[int] | np.ndarray, cp: int, axis: int = -1
) -> np.ndarray:
    """Reassemble a packed row from the shards of all CP ranks (the inverse of :func:`partition_thd`)."""
    if len(shards) != cp:
        raise UsageError(f"expected {cp} shards (one per CP rank), got {len(shards)}")
    first = np.asarray(shards[0])
    shape = list(first.shape)
    total = int(np.asarray(cu_seqlens)[-1])
    shape[axis] = total
    out = np.empty(shape, dtype=first.dtype)
    for rank, shard in enumerate(shards):
        index = zigzag_indices(cu_seqlens, cp, rank)
        moved = np.moveaxis(out, axis, 0)
        moved[index] = np.moveaxis(np.asarray(shard), axis, 0)
    return out


def partition_rows(values: np.ndarray, cp: int, rank: int, axis: int = -1) -> np.ndarray:
    """The shard of plain (not packed) rows: the same zigzag over the whole sequence dimension."""
    arr = np.asarray(values)
    _check_lengths(np.asarray([arr.shape[axis]]), cp, "row width of sequence")
    return partition_thd(arr, [0, arr.shape[axis]], cp, rank, axis=axis)


def unpartition_rows(shards: Sequence[np.ndarray], cp: int, axis: int = -1) -> np.ndarray:
    """Reassemble plain rows from all ranks' shards (the inverse of :func:`partition_rows`)."""
    width = sum(np.asarray(s).shape[axis] for s in shards)
    return unpartition_thd(shards, [0, width], cp, axis=axis)


def partition_packed_batch(batch: Mapping[str, Any], cp: int, rank: int) -> dict[str, Any]:
    """A collated packed batch (``PackedCollator`` output) as CP rank ``rank`` receives it.

    Per-token tensors [B, W] (``tokens``, ``labels``, ``loss_mask``, ``position_ids``, ``padding_mask``) are
    cut row by row with that row's physical boundaries; boundary keys stay global, as Megatron expects.
    """
    import torch

    cu_key = "cu_seqlens_q_padded" if "cu_seqlens_q_padded" in batch else "cu_seqlens_q"
    if cu_key not in batch:
        raise UsageError("partition_packed_batch needs a THD batch (cu_seqlens_q or cu_seqlens_q_padded)")
    cu_rows = np.asarray(batch[cu_key]).reshape(len(batch["tokens"]), -1)
    width = batch["tokens"].shape[1]
    if cp > 1 and width % (2 * cp):
        raise DataError(f"batch width {width} is not divisible by 2*CP = {2 * cp} (use a fixed width)")
    out = dict(batch)
    for key in ("tokens", "labels", "loss_mask", "position_ids", "padding_mask"):
        if key in batch:
            tensor = batch[key]
            rows = []
            for i in range(tensor.shape[0]):
                try:
                    index = zigzag_indices(cu_rows[i], cp, rank)
                except DataError as exc:
                    raise DataError(f"batch row {i}: {exc}") from None
                rows.append(tensor[i, torch.from_numpy(index)])
            out[key] = torch.stack(rows)
    return out
