"""``PaddingFreeCollator``: a batch of packed rows for a transformers model, sequences kept apart.

transformers isolates the sequences of a packed row only when the model gets ``position_ids`` that restart
at 0 at every sequence, **no** ``attention_mask`` and no cache (``use_cache=False``); its causal loss shifts
the labels inside the model (logits at ``t`` predict ``labels[t + 1]``), so every sequence's first label
must be -100, or the last token of one sequence is trained to predict the first of the next. Then each
sequence's loss is the one it has alone. Two rows, right-padded to the longest::

    row 0  input_ids [11 12 13 21 22]   seq_lengths [3, 2]
    row 1  input_ids [31 32 33]         seq_lengths [3]
    ->     input_ids    [[11 12 13 21 22] [31 32 33  0  0]]
           position_ids [[ 0  1  2  0  1] [ 0  1  2  0  1]]   padding: a sequence of its own
           labels       [[-100 12 13 -100 22] [-100 32 33 -100 -100]]

transformers' ``DataCollatorWithFlattening`` is not for such rows: it flattens the batch and gives each
*row* positions 0..n-1, so the sequences inside a packed row are merged into one (they attend to each
other and the boundary tokens are trained across).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bridgepack.data.packset import MAX_TOKEN_ID
from bridgepack.errors import DataError, UsageError, param
from bridgepack.packing import checked_multiple
from bridgepack.trl._values import integers, mask, token_ids

#: The label transformers' losses ignore.
IGNORE_INDEX = -100
#: Row fields that zero out the loss where they are 0 (TRL's names), applied when ``labels`` is absent.
MASK_FIELDS = ("completion_mask", "assistant_masks")


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _positions(row: Mapping[str, Any], index: int, n: int) -> np.ndarray:
    """A row's per-sequence positions: ``position_ids`` as stored, else from ``seq_lengths``, else one
    sequence (a ``wrapped`` row has no boundaries)."""
    if row.get("position_ids") is not None:
        positions = integers(index, "position_ids", row["position_ids"])
        if positions.shape != (n,):
            raise DataError(f"row {index}: field 'position_ids': expected {n} values, found {positions.size}")
        return positions
    if row.get("seq_lengths") is not None:
        lengths = integers(index, "seq_lengths", row["seq_lengths"])
        if lengths.sum() != n or (lengths <= 0).any():
            raise DataError(
                f"row {index}: field 'seq_lengths': expected positive lengths summing to {n}, "
                f"found {lengths.tolist()}"
            )
        return np.arange(n) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(n)


def _labels(row: Mapping[str, Any], index: int, ids: np.ndarray) -> np.ndarray:
    if row.get("labels") is not None:
        labels = integers(index, "labels", row["labels"])
        if labels.shape != ids.shape:
            raise DataError(f"row {index}: field 'labels': expected {ids.size} values, found {labels.size}")
        return labels.copy()
    labels = ids.copy()
    for field in MASK_FIELDS:
        if row.get(field) is not None:
            row_mask = mask(index, field, row[field])
            if row_mask.shape != ids.shape:
                raise DataError(
                    f"row {index}: field {field!r}: expected {ids.size} values, found {row_mask.size}"
                )
            labels[row_mask == 0] = IGNORE_INDEX
    return labels


@dataclass
class PaddingFreeCollator:
    """Collate packed rows (``bridgepack.trl.pack_dataset`` output, bridgepack's ``--layout padding-free``
    files, TRL's packed datasets) into ``input_ids``, ``position_ids`` and ``labels`` of shape
    ``[batch, width]``; no ``attention_mask``. Call the model with ``use_cache=False``.

    A row's boundaries come from ``position_ids`` (kept as given) or ``seq_lengths``; its labels from
    ``labels``, else ``input_ids`` with -100 where ``completion_mask`` / ``assistant_masks`` is 0 (a null
    field is an absent one, as a null ``loss_mask`` in ``bridgepack pack``). Values are checked as
    ``bridgepack
    pack`` checks a row (:mod:`bridgepack.trl._values`): a float or boolean id is refused, never truncated.
    Every
    sequence's first label and all padding are -100. Padding (``pad_token_id``, up to the longest row,
    rounded up to ``pad_to_multiple_of``) is one more sequence (positions 0, 1, ...), attending to nothing
    real.

    ``return_flash_attn_kwargs`` adds ``cu_seq_lens_q/k`` and ``max_length_q/k`` over the flattened batch,
    padding sequences included: flash attention isolates packed sequences from ``position_ids`` alone only
    for a batch of one row, and with these for any batch (sdpa, eager and flex ignore them).

    Not to be confused with :class:`bridgepack.batching.PackedCollator`, which builds Megatron-Bridge's THD
    batches.
    """

    pad_token_id: int = 0
    pad_to_multiple_of: int | None = None
    return_flash_attn_kwargs: bool = False

    def __post_init__(self) -> None:
        """Refuse settings numpy would misread (a negative multiple was a broadcast error, a float pad id
        truncated) when the collator is made, not at its first batch."""
        pad, multiple = self.pad_token_id, self.pad_to_multiple_of
        if not _is_int(pad) or not 0 <= pad <= MAX_TOKEN_ID:
            name = param("pad_token_id")
            raise UsageError(f"{name} must be a token id in [0, {MAX_TOKEN_ID}], got {pad!r}")
        if multiple is not None:  # the bound bridgepack pack puts on every pad multiple
            self.pad_to_multiple_of = checked_multiple("pad_to_multiple_of", multiple)
        if not isinstance(self.return_flash_attn_kwargs, bool):
            flag = param("return_flash_attn_kwargs")
            raise UsageError(f"{flag} must be True or False, got {self.return_flash_attn_kwargs!r}")

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        import torch

        if not rows:
            raise UsageError("cannot collate an empty batch")
        ids = [token_ids(i, "input_ids", row.get("input_ids")) for i, row in enumerate(rows)]
        width = max(x.size for x in ids)
        if self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        input_ids = np.full((len(rows), width), self.pad_token_id, dtype=np.int64)
        labels = np.full((len(rows), width), IGNORE_INDEX, dtype=np.int64)
        positions = np.zeros((len(rows), width), dtype=np.int64)
        for i, (row, row_ids) in enumerate(zip(rows, ids, strict=True)):
            n = row_ids.size
            row_positions = _positions(row, i, n)
            row_labels = _labels(row, i, row_ids)
            row_labels[row_positions == 0] = IGNORE_INDEX  # never predicted from the previous sequence
            input_ids[i, :n] = row_ids
            positions[i, :n] = row_positions
            positions[i, n:] = np.arange(width - n)
            labels[i, :n] = row_labels
        batch: dict[str, Any] = {
            "input_ids": torch.from_numpy(input_ids),
            "position_ids": torch.from_numpy(positions),
            "labels": torch.from_numpy(labels),
        }
        if self.return_flash_attn_kwargs:
            starts = np.flatnonzero(positions.reshape(-1) == 0)
            cu = np.append(starts, positions.size).astype(np.int32)
            longest = int(np.diff(cu).max())
            batch.update(cu_seq_lens_q=torch.from_numpy(cu), cu_seq_lens_k=torch.from_numpy(cu.copy()))
            batch.update(max_length_q=longest, max_length_k=longest)
        return batch
